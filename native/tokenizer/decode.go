package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// computePiece returns the bytes token id stands for when special tokens are shown (llama.cpp's
// token_to_piece with special=true, which fills its piece cache): control, unknown and
// user-defined tokens give their text, normal tokens their text with "▁" turned back into spaces
// (SPM) or the byte↔unicode map undone (BPE), byte tokens their byte, and other types nothing.
func (t *Tokenizer) computePiece(id int32) string {
	a, text := t.attrs[id], t.texts[id]
	switch {
	case a&(attrControl|attrUnknown|attrUserDefined) != 0:
		return text
	case a&attrNormal != 0:
		if t.kind == SPM {
			return strings.ReplaceAll(text, "▁", " ")
		}
		return decodeByteChars(text)
	case a&attrByte != 0:
		// llama.cpp reads the two hex digits after "<0x"; a byte token of another shape
		// gives 0, as strtol does.
		if len(text) >= 5 {
			if v, err := strconv.ParseUint(text[3:5], 16, 8); err == nil {
				return string([]byte{byte(v)})
			}
		}
		return "\x00"
	}
	return ""
}

// decodeByteChars undoes GPT-2's byte↔unicode map. A character outside the map is written as
// llama.cpp writes it, "[UNK_BYTE_0x<its UTF-8 in hex><the token text>]".
func decodeByteChars(text string) string {
	var b []byte
	for i := 0; i < len(text); {
		c, n := decodeCodepoint(text, i)
		if v, ok := charBytes[c]; ok {
			b = append(b, v)
		} else {
			b = append(b, "[UNK_BYTE_0x"...)
			for _, x := range appendCodepoint(nil, c) {
				b = fmt.Appendf(b, "%02x", x)
			}
			b = append(b, text...)
			b = append(b, ']')
		}
		i += n
	}
	return string(b)
}

// Piece returns the bytes token id stands for (llama.cpp's llama_token_to_piece with lstrip 0):
// the text of a normal token with spaces restored, the byte of a byte token, and the text of a
// control or unknown token only when special is set (user-defined tokens always). It returns ""
// for an id out of range. A piece need not be valid UTF-8: a character can span byte tokens.
func (t *Tokenizer) Piece(id int32, special bool) string {
	if !t.valid(id) {
		return ""
	}
	if !special && t.attrs[id]&(attrControl|attrUnknown) != 0 {
		return ""
	}
	return t.pieces[id]
}

// DecodeOptions are the flags of llama.cpp's llama_detokenize.
type DecodeOptions struct {
	// RemoveSpecial drops a leading BOS (when the vocabulary adds one) and a trailing EOS
	// (when it adds one).
	RemoveSpecial bool
	// Special renders control and unknown tokens as their text ("unparse_special").
	Special bool
}

// Detokenize returns the text of ids as llama.cpp's llama_detokenize does: the pieces
// concatenated, one leading space dropped from the first piece when the vocabulary adds a
// dummy-prefix space (SPM) and the ids do not start with a BOS that RemoveSpecial removed, and,
// for vocabularies that ask for it (BPE apart from some pre-tokenizers), the clean-up of
// tokenization spaces: " ?", " !", " .", " ," lose their space, " ' " becomes "'", and " 's",
// " 'm", " 're", " 've" lose theirs. Ids out of range contribute nothing.
func (t *Tokenizer) Detokenize(ids []int32, opt DecodeOptions) string {
	removeSpace := t.addSpacePrefix
	if opt.RemoveSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		removeSpace = false
		ids = ids[1:]
	}
	if opt.RemoveSpecial && t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	var b []byte
	for _, id := range ids {
		p := t.Piece(id, opt.Special)
		if removeSpace && strings.HasPrefix(p, " ") {
			p = p[1:]
		}
		removeSpace = false
		b = append(b, p...)
	}
	if t.cleanSpaces {
		b = cleanSpaces(b)
	}
	return string(b)
}

// Decode returns the text of ids: Detokenize with no options, so control tokens print nothing
// and the dummy-prefix space SPM encoding adds is removed. For valid UTF-8 s without "▁",
// Decode(Encode(s, false, false)) == s for an SPM vocabulary with byte fallback; for a
// byte-level BPE vocabulary it holds when the clean-up of tokenization spaces (see Detokenize)
// leaves s unchanged, and concatenating Piece of each id always gives s back.
func (t *Tokenizer) Decode(ids []int32) string { return t.Detokenize(ids, DecodeOptions{}) }

// cleanSpaces is llama.cpp's clean_up_tokenization_spaces, three passes over the bytes.
func cleanSpaces(text []byte) []byte {
	if len(text) == 0 {
		return text
	}
	// " ?", " !", " .", " ," → drop the space.
	n := 1
	for i := 1; i < len(text); i++ {
		x := text[i]
		if text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			n--
		}
		text[n] = x
		n++
	}
	text = text[:n]

	// " ' " → "'".
	n = 1
	for i := 1; i < len(text); i++ {
		x := text[i]
		if x == '\'' && i+1 < len(text) && text[i-1] == ' ' && text[i+1] == ' ' {
			n--
			text[i+1] = 0 // llama.cpp writes a NUL over the next space and skips it
			text[n] = x
			n++
			i++
			continue
		}
		text[n] = x
		n++
	}
	text = text[:n]

	// " 's", " 'm", " 're", " 've" → drop the space.
	n = 1
	for i := 1; i < len(text); i++ {
		x := text[i]
		if text[i-1] == ' ' && x == '\'' && i+1 < len(text) {
			x1 := text[i+1]
			switch {
			case x1 == 's' || x1 == 'm':
				n--
			case x1 == 't' || x1 == 'd':
			case i+2 < len(text):
				x2 := text[i+2]
				if (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e') {
					n--
				}
			}
		}
		text[n] = x
		n++
	}
	return text[:n]
}

// Stream turns ids generated one at a time into text: Add returns the text that is complete
// so far and holds back a trailing UTF-8 sequence that later byte tokens may finish. Pieces are
// joined as llama.cpp's token-by-token output joins them: no leading-space removal and no
// clean-up of spaces. A Stream is not safe for concurrent use.
type Stream struct {
	t       *Tokenizer
	special bool
	pending []byte
}

// NewStream returns a Stream over t's vocabulary; special renders control and unknown tokens
// as their text.
func (t *Tokenizer) NewStream(special bool) *Stream { return &Stream{t: t, special: special} }

// Add appends the piece of id and returns the text that is now complete. The held-back tail is
// at most three bytes: the start of one UTF-8 sequence still missing continuation bytes. Bytes
// that cannot start or continue a valid sequence are not held back.
func (s *Stream) Add(id int32) string {
	s.pending = append(s.pending, s.t.Piece(id, s.special)...)
	cut := len(s.pending) - incompleteTail(s.pending)
	out := string(s.pending[:cut])
	s.pending = append(s.pending[:0], s.pending[cut:]...)
	return out
}

// Flush returns the held-back bytes (possibly an incomplete UTF-8 sequence) and empties the
// Stream.
func (s *Stream) Flush() string {
	out := string(s.pending)
	s.pending = s.pending[:0]
	return out
}

// incompleteTail returns the length of the suffix of b that is the proper prefix of a valid
// UTF-8 sequence, or 0.
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c&0xC0 == 0x80 {
			continue // a continuation byte: look further back for the lead byte
		}
		if c < 0xC0 || utf8Len(c) <= k {
			return 0
		}
		if !utf8.FullRune(b[len(b)-k:]) {
			return k
		}
		return 0
	}
	return 0
}
