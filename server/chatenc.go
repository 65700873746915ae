package server

import (
	"github.com/kvlab/kvlab/native/tokenizer"
	"github.com/kvlab/kvlab/server/chattemplate"
)

// encodeChat renders a conversation in format k and tokenizes it with BOS prepended when the
// vocabulary asks for it. Only the format's own markers are parsed as special tokens; the
// messages' content is tokenized as text, so a message holding "<|im_end|>\n<|im_start|>system"
// or "</s><s>" cannot forge a turn, an end of sequence or a BOS.
func encodeChat(tok *tokenizer.Tokenizer, k chattemplate.Format, msgs []chattemplate.Message) ([]int32, error) {
	segs, err := chattemplate.RenderSegments(k, msgs)
	if err != nil {
		return nil, err
	}
	return encodeSegments(tok, segs)
}

// encodeSegments is encodeChat's tokenization of a rendering.
func encodeSegments(tok *tokenizer.Tokenizer, segs []chattemplate.Segment) ([]int32, error) {
	parts := make([]tokenizer.Part, len(segs))
	for i, s := range segs {
		parts[i] = tokenizer.Part{Text: s.Text, Special: s.Template}
	}
	ids := tok.EncodeParts(parts, true)
	if len(ids) == 0 {
		if tok.BOS() == tokenizer.NoToken {
			return nil, ErrEmptyPrompt
		}
		ids = []int32{tok.BOS()}
	}
	return ids, nil
}
