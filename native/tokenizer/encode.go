package tokenizer

import "strings"

// fragment is a piece of the input after special tokens are split out: raw text still to be
// tokenized, or one special token (tok != NoToken).
type fragment struct {
	text string
	tok  int32
}

// partition splits text at occurrences of special tokens, as llama.cpp's
// tokenizer_st_partition: tokens are tried longest text first, each splitting the raw fragments
// left by the ones before it at every occurrence, left to right. User-defined tokens are always
// split out; control and unknown tokens only when parseSpecial is set.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{text: text, tok: NoToken}}
	var next []fragment
	for _, id := range t.special {
		if !parseSpecial && t.attrs[id]&(attrControl|attrUnknown) != 0 {
			continue
		}
		st := t.texts[id]
		if !strings.Contains(text, st) {
			continue // no fragment, being a substring of text, can hold it
		}
		next = next[:0]
		for _, f := range frags {
			if f.tok != NoToken {
				next = append(next, f)
				continue
			}
			s := f.text
			for {
				i := strings.Index(s, st)
				if i < 0 {
					if s != "" {
						next = append(next, fragment{text: s, tok: NoToken})
					}
					break
				}
				if i > 0 {
					next = append(next, fragment{text: s[:i], tok: NoToken})
				}
				next = append(next, fragment{tok: id})
				s = s[i+len(st):]
			}
		}
		frags, next = next, frags
	}
	return frags
}

// Encode returns the token ids of text.
//
// With addSpecial, BOS is prepended when the vocabulary adds one (AddBOS) and EOS appended when
// it adds one (AddEOS). With parseSpecial, the texts of control tokens in the input (such as
// "<s>" or "<|im_start|>") become those tokens; without it they are tokenized as text.
// User-defined tokens are always matched.
//
// SPM vocabularies escape spaces to "▁" and, when the vocabulary asks for it (the default),
// prefix one space to the text at the start and after each special token. BPE vocabularies
// pre-tokenize with their tokenizer.ggml.pre pattern and replace each ill-formed UTF-8 byte by
// U+FFFD first, as llama.cpp does; SPM keeps ill-formed bytes and emits them as byte tokens.
//
// Encode never fails: bytes no token covers are dropped (BPE) or become UNK (SPM without byte
// tokens), as in llama.cpp.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) []int32 {
	return t.encodeFragments(t.partition(text, parseSpecial), len(text), addSpecial)
}

// encodeFragments tokenizes partitioned text (Encode's second half).
func (t *Tokenizer) encodeFragments(frags []fragment, size int, addSpecial bool) []int32 {
	return t.encodeFrom(frags, size, addSpecial, true)
}

// encodeFrom is encodeFragments for text at the start (atStart: SPM prefixes its dummy space)
// or continuing text already tokenized (no space at its start).
func (t *Tokenizer) encodeFrom(frags []fragment, size int, addSpecial, atStart bool) []int32 {
	out := make([]int32, 0, size/3+2)
	if addSpecial && t.addBOS {
		out = append(out, t.bos)
	}
	switch t.kind {
	case SPM:
		var sess spmSession
		prevSpecial := atStart
		for _, f := range frags {
			if f.tok != NoToken {
				out = append(out, f.tok)
				prevSpecial = true
				continue
			}
			s := f.text
			if t.addSpacePrefix && prevSpecial {
				s = " " + s
			}
			out = sess.tokenize(t, strings.ReplaceAll(s, " ", "▁"), out)
			prevSpecial = false
		}
	case BPE:
		var sess bpeSession
		for _, f := range frags {
			if f.tok != NoToken {
				out = append(out, f.tok)
				continue
			}
			out = sess.tokenize(t, f.text, out)
		}
	}
	if addSpecial && t.addEOS {
		out = append(out, t.eos)
	}
	return out
}

// pq is a binary heap whose top is the element before which no other comes.
type pq[T any] struct {
	s      []T
	before func(a, b *T) bool
}

func (h *pq[T]) len() int { return len(h.s) }

func (h *pq[T]) reset() { h.s = h.s[:0] }

func (h *pq[T]) push(x T) {
	h.s = append(h.s, x)
	i := len(h.s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.before(&h.s[i], &h.s[p]) {
			break
		}
		h.s[i], h.s[p] = h.s[p], h.s[i]
		i = p
	}
}

func (h *pq[T]) pop() T {
	top := h.s[0]
	n := len(h.s) - 1
	h.s[0] = h.s[n]
	h.s = h.s[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.before(&h.s[l], &h.s[m]) {
			m = l
		}
		if r < n && h.before(&h.s[r], &h.s[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.s[i], h.s[m] = h.s[m], h.s[i]
		i = m
	}
	return top
}

// symbol is a run of bytes s[off : off+n] of the text being merged, linked to its neighbours;
// n is 0 once the symbol has been merged into its left neighbour.
type symbol struct {
	prev, next int32
	off, n     int32
}

// spmBigram is a candidate merge of two adjacent symbols into a token of the given score.
type spmBigram struct {
	left, right int32
	score       float32
	size        int32
}

// spmSession holds the scratch state of one SPM tokenization (llama.cpp's
// llm_tokenizer_spm_session).
type spmSession struct {
	syms  []symbol
	queue pq[spmBigram]
}

// tokenize appends the tokens of s (spaces already escaped) to out: symbols start as single
// UTF-8 sequences (by lead byte, ill-formed bytes alone), then the adjacent pair whose
// concatenation is the highest-scoring token is merged (ties: leftmost first) until no pair is a
// token. A final symbol that is not a token is emitted as byte tokens.
//
// llama.cpp first looks such a symbol up in a record of merged texts to split it back along
// its merges; that record only holds texts that are tokens, and a symbol that is not a token was
// never merged, so the lookup never succeeds and is left out here.
func (ss *spmSession) tokenize(t *Tokenizer, s string, out []int32) []int32 {
	if s == "" {
		return out
	}
	ss.syms = ss.syms[:0]
	for off := 0; off < len(s); {
		n := min(utf8Len(s[off]), len(s)-off)
		i := int32(len(ss.syms))
		next := i + 1
		if off+n == len(s) {
			next = -1
		}
		ss.syms = append(ss.syms, symbol{prev: i - 1, next: next, off: int32(off), n: int32(n)})
		off += n
	}
	if ss.queue.before == nil {
		ss.queue.before = func(a, b *spmBigram) bool {
			return a.score > b.score || (a.score == b.score && a.left < b.left)
		}
	}
	ss.queue.reset()

	syms := ss.syms
	tryAdd := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		text := s[syms[l].off : syms[l].off+syms[l].n+syms[r].n]
		id, ok := t.ids[text]
		if !ok {
			return
		}
		ss.queue.push(spmBigram{left: l, right: r, score: t.scores[id], size: int32(len(text))})
	}
	for i := int32(1); i < int32(len(syms)); i++ {
		tryAdd(i-1, i)
	}
	for ss.queue.len() > 0 {
		b := ss.queue.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		tryAdd(l.prev, b.left)
		tryAdd(b.left, l.next)
	}
	for i := int32(0); i != -1; i = syms[i].next {
		text := s[syms[i].off : syms[i].off+syms[i].n]
		if id, ok := t.ids[text]; ok {
			out = append(out, id)
			continue
		}
		for j := range len(text) {
			switch id := t.byteTok[text[j]]; {
			case id != NoToken:
				out = append(out, id)
			case t.unk != NoToken:
				out = append(out, t.unk)
			}
		}
	}
	return out
}

// bpeBigram is a candidate merge of two adjacent symbols whose pair has the given rank.
type bpeBigram struct {
	left, right int32
	rank        int32
	text        string
}

// bpeSession holds the scratch state of one BPE tokenization (llama.cpp's
// llm_tokenizer_bpe_session).
type bpeSession struct {
	cps   []rune
	word  []byte
	syms  []symbol
	queue pq[bpeBigram]
}

// tokenize appends the tokens of text to out: the text is cut into words by the
// pre-tokenizer, each word's UTF-8 bytes are mapped to GPT-2's byte characters, and the adjacent
// pair of symbols with the lowest merge rank is merged (ties: leftmost first) until no pair has a
// rank. A final symbol that is not a token is emitted byte by byte where single bytes are tokens.
func (bs *bpeSession) tokenize(t *Tokenizer, text string, out []int32) []int32 {
	bs.cps = decodeCodepoints(bs.cps[:0], text)
	if bs.queue.before == nil {
		bs.queue.before = func(a, b *bpeBigram) bool {
			return a.rank < b.rank || (a.rank == b.rank && a.left < b.left)
		}
	}
	start := 0
	for _, n := range t.pretok.split(bs.cps) {
		bs.word = bs.word[:0]
		var buf [4]byte
		for _, c := range bs.cps[start : start+n] {
			for _, b := range appendCodepoint(buf[:0], c) {
				bs.word = append(bs.word, byteChars[b]...)
			}
		}
		start += n
		out = bs.word1(t, string(bs.word), out)
	}
	return out
}

// word1 merges and emits one byte-encoded word.
func (bs *bpeSession) word1(t *Tokenizer, w string, out []int32) []int32 {
	if w == "" {
		return out
	}
	if t.ignoreMerges {
		if id, ok := t.ids[w]; ok {
			return append(out, id)
		}
	}
	bs.syms = bs.syms[:0]
	for off := 0; off < len(w); {
		n := min(utf8Len(w[off]), len(w)-off)
		i := int32(len(bs.syms))
		next := i + 1
		if off+n == len(w) {
			next = -1
		}
		bs.syms = append(bs.syms, symbol{prev: i - 1, next: next, off: int32(off), n: int32(n)})
		off += n
	}
	syms := bs.syms
	str := func(i int32) string { return w[syms[i].off : syms[i].off+syms[i].n] }
	tryAdd := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		rank, ok := t.merges[mergeKey{str(l), str(r)}]
		if !ok {
			return
		}
		bs.queue.push(bpeBigram{left: l, right: r, rank: rank, text: w[syms[l].off : syms[l].off+syms[l].n+syms[r].n]})
	}
	bs.queue.reset()
	for i := int32(1); i < int32(len(syms)); i++ {
		tryAdd(i-1, i)
	}
	for bs.queue.len() > 0 {
		b := bs.queue.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != int32(len(b.text)) || l.off+l.n != r.off {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		tryAdd(l.prev, b.left)
		tryAdd(b.left, l.next)
	}
	for i := int32(0); i != -1; i = syms[i].next {
		if syms[i].n == 0 {
			continue
		}
		s := str(i)
		if id, ok := t.ids[s]; ok {
			out = append(out, id)
			continue
		}
		for j := range len(s) {
			if id, ok := t.ids[s[j:j+1]]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}

// byteChars is GPT-2's byte→unicode map, as UTF-8: the printable bytes '!'…'~', '¡'…'¬' and
// '®'…'ÿ' stand for themselves, and the other 68 bytes, in order, for U+0100 onwards.
var byteChars = func() (m [256]string) {
	n := 0
	for b := range 256 {
		if (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = string(rune(b))
		} else {
			m[b] = string(rune(256 + n))
			n++
		}
	}
	return m
}()

// charBytes is the inverse of byteChars.
var charBytes = func() map[rune]byte {
	m := make(map[rune]byte, 256)
	for b, s := range byteChars {
		m[[]rune(s)[0]] = byte(b)
	}
	return m
}()
