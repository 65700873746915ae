package tokenizer

import "unicode"

// This file holds the BPE pre-tokenizers: they cut text (as code points) into words before the
// byte-level merges run, as llama.cpp's unicode_regex_split does for each tokenizer.ggml.pre.
// Go's regexp has neither lookahead nor the backtracking the patterns rely on, so each pattern is
// a hand-written scanner whose result equals what llama.cpp computes:
//
//   - gpt2 and llama3 reproduce llama.cpp's own hand-written splitters
//     (unicode_regex_split_custom_gpt2 and _llama3), quirks included.
//   - qwen2 and the default chain reproduce std::regex over llama.cpp's "collapsed" text, where
//     every non-ASCII code point stands for its category; the scanners test the same categories.
//
// A splitter refines a partition: it takes the text's code points and the lengths (in code
// points) of the pieces found so far, and returns the lengths of the finer pieces. Each pattern
// of a chain runs within the pieces of the previous one, never across their borders.

// splitter refines the partition pieces of cps; see the file comment.
type splitter func(cps []rune, pieces []int) []int

// preTokenizer is the chain of splitters for one tokenizer.ggml.pre.
type preTokenizer []splitter

// split returns the pieces of cps as lengths in code points.
func (p preTokenizer) split(cps []rune) []int {
	pieces := []int{len(cps)}
	if len(cps) == 0 {
		return nil
	}
	for _, s := range p {
		pieces = s(cps, pieces)
	}
	return pieces
}

var (
	preGPT2    = preTokenizer{splitGPT2}
	preLlama3  = preTokenizer{splitLlama3}
	preQwen2   = preTokenizer{splitQwen2}
	preDefault = preTokenizer{splitDefaultPunct, splitGPT2, splitNumberRuns, splitDigitTriples}
)

// scanner walks one piece [ini, end) of cps and records where tokens end.
type scanner struct {
	cps      []rune
	ini, end int
	prevEnd  int
	out      []int
}

// outOfRange stands for a position outside the current piece (llama.cpp's OUT_OF_RANGE).
const outOfRange rune = -1

func (s *scanner) cpt(pos int) rune {
	if pos >= s.ini && pos < s.end {
		return s.cps[pos]
	}
	return outOfRange
}

// flags returns the class of the code point at pos, or 0 outside the piece.
func (s *scanner) flags(pos int) class {
	if pos >= s.ini && pos < s.end {
		return classOf(s.cps[pos])
	}
	return 0
}

// add ends a token at end and returns its length (0 when end is the previous end).
func (s *scanner) add(end int) int {
	n := end - s.prevEnd
	if n > 0 {
		s.out = append(s.out, n)
	}
	s.prevEnd = end
	return n
}

// eachPiece runs scan over every piece of pieces with a fresh scanner state and returns the
// refined lengths.
func eachPiece(cps []rune, pieces []int, scan func(s *scanner)) []int {
	s := &scanner{cps: cps, out: make([]int, 0, len(pieces)+len(cps)/4)}
	start := 0
	for _, n := range pieces {
		s.ini, s.end, s.prevEnd = start, start+n, start
		scan(s)
		start += n
	}
	return s.out
}

// splitGPT2 is llama.cpp's hand-written version of the GPT-2 pattern
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// (llama.cpp's regex list omits the final \s+, its splitter has it; the pieces are the same
// either way because unmatched text becomes a piece of its own). Contractions are
// case-sensitive, and a run of whitespace at the very end of a piece stays whole.
func splitGPT2(cps []rune, pieces []int) []int {
	return eachPiece(cps, pieces, func(s *scanner) {
		for pos := s.ini; pos < s.end; {
			c := s.cpt(pos)
			f := s.flags(pos)

			if c == '\'' && pos+1 < s.end {
				next := s.cpt(pos + 1)
				if next == 's' || next == 't' || next == 'm' || next == 'd' {
					pos += s.add(pos + 2)
					continue
				}
				if pos+2 < s.end {
					nn := s.cpt(pos + 2)
					if (next == 'r' && nn == 'e') || (next == 'v' && nn == 'e') || (next == 'l' && nn == 'l') {
						pos += s.add(pos + 3)
						continue
					}
				}
			}

			f2 := f
			if c == ' ' {
				f2 = s.flags(pos + 1)
			}
			if f2&clsLetter != 0 {
				if c == ' ' {
					pos++
				}
				for f2&clsLetter != 0 {
					pos++
					f2 = s.flags(pos)
				}
				s.add(pos)
				continue
			}
			if f2&clsNumber != 0 {
				if c == ' ' {
					pos++
				}
				for f2&clsNumber != 0 {
					pos++
					f2 = s.flags(pos)
				}
				s.add(pos)
				continue
			}
			if f2&(clsSpace|clsLetter|clsNumber) == 0 && f2 != 0 {
				if c == ' ' {
					pos++
				}
				for f2&(clsSpace|clsLetter|clsNumber) == 0 && f2 != 0 {
					pos++
					f2 = s.flags(pos)
				}
				s.add(pos)
				continue
			}

			nws := 0
			for s.flags(pos+nws)&clsSpace != 0 {
				nws++
			}
			if nws > 1 && s.cpt(pos+nws) != outOfRange { // \s+(?!\S)
				pos += nws - 1
				s.add(pos)
				continue
			}
			if nws > 0 { // \s+
				pos += nws
				s.add(pos)
				continue
			}
			pos++
			s.add(pos)
		}
	})
}

// splitLlama3 is llama.cpp's hand-written version of the Llama 3 pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// including its one deviation: a lone space at the very end of a piece takes the
// " ?[^\s\p{L}\p{N}]+" branch (llama.cpp tests the space's own flags there), which yields the
// same piece the regex would.
func splitLlama3(cps []rune, pieces []int) []int {
	return eachPiece(cps, pieces, func(s *scanner) {
		for pos := s.ini; pos < s.end; {
			c := s.cpt(pos)
			f := s.flags(pos)

			if c == '\'' && pos+1 < s.end {
				next := unicode.ToLower(s.cpt(pos + 1))
				if next == 's' || next == 't' || next == 'm' || next == 'd' {
					pos += s.add(pos + 2)
					continue
				}
				if pos+2 < s.end {
					nn := unicode.ToLower(s.cpt(pos + 2))
					if (next == 'r' && nn == 'e') || (next == 'v' && nn == 'e') || (next == 'l' && nn == 'l') {
						pos += s.add(pos + 3)
						continue
					}
				}
			}

			// [^\r\n\p{L}\p{N}]?\p{L}+
			if !(c == '\r' || c == '\n' || f&clsNumber != 0) {
				if f&clsLetter != 0 || s.flags(pos+1)&clsLetter != 0 {
					pos++
					for s.flags(pos)&clsLetter != 0 {
						pos++
					}
					s.add(pos)
					continue
				}
			}

			// \p{N}{1,3}
			if f&clsNumber != 0 {
				ini := pos
				for s.flags(pos)&clsNumber != 0 {
					pos++
					if pos-ini >= 3 {
						s.add(pos)
						ini = pos
					}
				}
				s.add(pos)
				continue
			}

			// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
			f2 := f
			if c == ' ' {
				f2 = s.flags(pos + 1)
			}
			if f2&(clsSpace|clsLetter|clsNumber) == 0 && f != 0 {
				if c == ' ' {
					pos++
				}
				for f2&(clsSpace|clsLetter|clsNumber) == 0 && f2 != 0 {
					pos++
					f2 = s.flags(pos)
				}
				for c2 := s.cpt(pos); c2 == '\r' || c2 == '\n'; c2 = s.cpt(pos) {
					pos++
				}
				s.add(pos)
				continue
			}

			nws, lastNL := 0, 0
			for s.flags(pos+nws)&clsSpace != 0 {
				if c2 := s.cpt(pos + nws); c2 == '\r' || c2 == '\n' {
					lastNL = pos + nws + 1
				}
				nws++
			}
			if lastNL > 0 { // \s*[\r\n]+
				pos = lastNL
				s.add(pos)
				continue
			}
			if nws > 1 && s.cpt(pos+nws) != outOfRange { // \s+(?!\S)
				pos += nws - 1
				s.add(pos)
				continue
			}
			if nws > 0 { // \s+
				pos += nws
				s.add(pos)
				continue
			}
			pos++
			s.add(pos)
		}
	})
}

// Character tests of llama.cpp's collapsed-text regexes. Every ASCII code point stands for
// itself and every other one for its category, with whitespace taking precedence, so these equal
// the flag tests.
func isL(f class) bool     { return f&clsSpace == 0 && f&clsLetter != 0 }
func isN(f class) bool     { return f&clsSpace == 0 && f&clsNumber != 0 }
func isS(f class) bool     { return f&clsSpace != 0 }
func isOther(f class) bool { return f&(clsSpace|clsLetter|clsNumber) == 0 }

func asciiFold(c rune) rune {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// splitQwen2 matches the Qwen2 pattern the way std::regex (ECMAScript, leftmost alternative
// first, greedy with backtracking) does over llama.cpp's collapsed text:
//
//	(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Every code point starts a match of some alternative, so the pieces are exactly the matches.
func splitQwen2(cps []rune, pieces []int) []int {
	return eachPiece(cps, pieces, func(s *scanner) {
		at := func(pos int) rune { return s.cpt(pos) }
		for pos := s.ini; pos < s.end; {
			c := at(pos)
			f := classOf(c)

			if c == '\'' && pos+1 < s.end {
				next := asciiFold(at(pos + 1))
				if next == 's' || next == 't' || next == 'm' || next == 'd' {
					pos += s.add(pos + 2)
					continue
				}
				if pos+2 < s.end {
					nn := asciiFold(at(pos + 2))
					if (next == 'r' && nn == 'e') || (next == 'v' && nn == 'e') || (next == 'l' && nn == 'l') {
						pos += s.add(pos + 3)
						continue
					}
				}
			}

			// [^\r\n\p{L}\p{N}]?\p{L}+
			if isL(f) || (c != '\r' && c != '\n' && !isN(f) && pos+1 < s.end && isL(classOf(at(pos+1)))) {
				pos++
				for pos < s.end && isL(classOf(at(pos))) {
					pos++
				}
				s.add(pos)
				continue
			}

			// \p{N}
			if isN(f) {
				pos++
				s.add(pos)
				continue
			}

			// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
			if isOther(f) || (c == ' ' && pos+1 < s.end && isOther(classOf(at(pos+1)))) {
				pos++
				for pos < s.end && isOther(classOf(at(pos))) {
					pos++
				}
				for pos < s.end && (at(pos) == '\r' || at(pos) == '\n') {
					pos++
				}
				s.add(pos)
				continue
			}

			// c is whitespace: the run [pos, q).
			q, lastNL := pos, 0
			for q < s.end && isS(classOf(at(q))) {
				if at(q) == '\r' || at(q) == '\n' {
					lastNL = q + 1
				}
				q++
			}
			switch {
			case lastNL > 0: // \s*[\r\n]+
				pos = lastNL
			case q == s.end || q-pos > 1: // \s+(?!\S)
				if q < s.end {
					q--
				}
				pos = q
			default: // \s+
				pos = q
			}
			s.add(pos)
		}
	})
}

// splitRuns splits every piece into maximal runs of code points for which in reports true and
// the runs between them, as std::regex_iterator over the pattern "[…]+" does.
func splitRuns(cps []rune, pieces []int, in func(rune) bool) []int {
	return eachPiece(cps, pieces, func(s *scanner) {
		for pos := s.ini; pos < s.end; {
			want := in(cps[pos])
			for pos < s.end && in(cps[pos]) == want {
				pos++
			}
			s.add(pos)
		}
	})
}

// splitDefaultPunct is the first pattern of llama.cpp's default BPE chain, [\p{P}\$\+<=>\^~\|]+.
func splitDefaultPunct(cps []rune, pieces []int) []int {
	return splitRuns(cps, pieces, func(c rune) bool {
		switch c {
		case '$', '+', '<', '=', '>', '^', '~', '|':
			return true
		}
		f := classOf(c)
		return f&clsSpace == 0 && f&clsPunct != 0
	})
}

// splitNumberRuns is the default chain's \p{N}+.
func splitNumberRuns(cps []rune, pieces []int) []int {
	return splitRuns(cps, pieces, func(c rune) bool { return isN(classOf(c)) })
}

// splitDigitTriples is the default chain's [0-9][0-9][0-9]: each group of three ASCII digits,
// taken left to right, is a piece, and so is the text between groups.
func splitDigitTriples(cps []rune, pieces []int) []int {
	digit := func(c rune) bool { return c >= '0' && c <= '9' }
	return eachPiece(cps, pieces, func(s *scanner) {
		for pos := s.ini; pos < s.end; {
			if pos+3 <= s.end && digit(cps[pos]) && digit(cps[pos+1]) && digit(cps[pos+2]) {
				s.add(pos)
				pos += 3
				s.add(pos)
				continue
			}
			pos++
		}
		s.add(s.end)
	})
}
