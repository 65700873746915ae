package tokenizer

// Part is a piece of a prompt and whether its special-token texts are parsed: a chat format's
// own markers are (Special), a message's content never is, so that "<|im_end|>" typed by a
// user stays text instead of closing the turn (llama.cpp's parse_special split).
type Part struct {
	Text    string
	Special bool
}

// EncodeParts is Encode of the parts' concatenated text, with special tokens parsed only in
// the parts that allow it. Raw text left beside a special token by neighbouring parts is
// joined before it is tokenized, so a prompt whose content holds no special-token text
// tokenizes exactly as Encode(text, addSpecial, true) does.
func (t *Tokenizer) EncodeParts(parts []Part, addSpecial bool) []int32 {
	frags, size := t.partitionParts(parts)
	return t.encodeFragments(frags, size, addSpecial)
}

// EncodePartsContinuation is EncodeParts for parts that continue a text already tokenized: no
// BOS or EOS, and no SPM dummy-prefix space at their start (there still is one after each
// special token). A conversation's next turn is encoded with it after the earlier turns' tokens.
func (t *Tokenizer) EncodePartsContinuation(parts []Part) []int32 {
	frags, size := t.partitionParts(parts)
	return t.encodeFrom(frags, size, false, false)
}

func (t *Tokenizer) partitionParts(parts []Part) ([]fragment, int) {
	var frags []fragment
	size := 0
	for _, p := range parts {
		size += len(p.Text)
		for _, f := range t.partition(p.Text, p.Special) {
			if n := len(frags); f.tok == NoToken && n > 0 && frags[n-1].tok == NoToken {
				frags[n-1].text += f.text
				continue
			}
			frags = append(frags, f)
		}
	}
	return frags, size
}
