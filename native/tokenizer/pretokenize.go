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
	// preFalcon is [\p{P}\$\+<=>\^~\|`]+, GPT-2, [0-9][0-9][0-9].
	preFalcon = preTokenizer{splitFalconPunct, splitGPT2, splitDigitTriples}
	// preStarCoder is \p{N}, GPT-2 (starcoder, refact, command-r, smollm, codeshell, exaone, …).
	preStarCoder = preTokenizer{splitEachNumber, splitGPT2}
	// preDeepSeekLLM is [\r\n], \s?[letters]+, \s?[punctuation]+, \s+$, [CJK]+, \p{N}+.
	preDeepSeekLLM = preTokenizer{splitEachNewline, regexSplit(matchDeepSeekLetters),
		regexSplit(matchDeepSeekPunct), splitTrailingSpace, splitDeepSeekCJK, splitNumberRuns}
	// preDeepSeekCoder is [\r\n], \s?\p{L}+, \s?\p{P}+, [CJK]+, \p{N}.
	preDeepSeekCoder = preTokenizer{splitEachNewline, regexSplit(matchSpaceLetters),
		regexSplit(matchSpacePunct), splitDeepSeekCJK, splitEachNumber}
	// preDeepSeekV3 is \p{N}{1,3}, [CJK and kana]+, then one alternation (matchDeepSeekV3).
	preDeepSeekV3 = preTokenizer{splitNumberTriples, splitDeepSeekV3Kana, regexSplit(matchDeepSeekV3)}
	// preBloom is " ?[^(\s|.,!?…。，、।۔،)]+" (bloom, poro-chat, gpt3-finnish).
	preBloom = preTokenizer{regexSplit(matchBloom)}
	// preViking is the Bloom pattern, then \p{N}.
	preViking = preTokenizer{regexSplit(matchBloom), splitEachNumber}
	// preTekken is Mistral's Tekken pattern (matchTekken).
	preTekken = preTokenizer{regexSplit(matchTekken)}
	// preGPT4o is the o200k pattern (matchGPT4o) of GPT-4o-style vocabularies and Llama 4.
	preGPT4o = preTokenizer{regexSplit(matchGPT4o)}
	// preSeedCoder is Seed-Coder's pattern (matchSeedCoder).
	preSeedCoder = preTokenizer{regexSplit(matchSeedCoder)}
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

// The pre-tokenizers below are patterns llama.cpp runs with std::regex (or std::wregex): their
// pieces are the matches of a leftmost-first, greedy, backtracking search and the text between
// matches. Each is written as a matcher, which returns the length of the match that starts at a
// position (0 when none does), and regexSplit turns a matcher into a splitter the way
// std::regex_iterator walks a piece. The character tests follow what those engines see:
//
//   - a pattern with \p{…} runs over the collapsed text, where \p{L}, \p{N}, \p{P}, \p{M} and
//     \p{S} match their non-ASCII category and the ASCII code points llama.cpp lists for them —
//     the Unicode categories, except that "~" (a math symbol) is in none of them;
//   - a pattern without \p{…} runs over the code points themselves, with every non-ASCII
//     whitespace code point replaced by \v, so explicit ranges never match whitespace;
//   - in both, \s matches exactly the White_Space code points.

// matcher returns the length of the match of a pattern at pos in s's piece, or 0.
type matcher func(s *scanner, pos int) int

// regexSplit returns the splitter that cuts each piece at the leftmost matches of m and keeps
// the text between matches as pieces of their own.
func regexSplit(m matcher) splitter {
	return func(cps []rune, pieces []int) []int {
		return eachPiece(cps, pieces, func(s *scanner) {
			for pos := s.ini; pos < s.end; {
				n := m(s, pos)
				if n <= 0 {
					pos++
					continue
				}
				s.add(pos)
				pos += n
				s.add(pos)
			}
			s.add(s.end)
		})
	}
}

// is reports whether pos is inside the piece and its code point satisfies in.
func (s *scanner) is(pos int, in func(rune) bool) bool {
	return pos >= s.ini && pos < s.end && in(s.cps[pos])
}

// run returns the end of the run of code points satisfying in that starts at pos.
func (s *scanner) run(pos int, in func(rune) bool) int {
	for s.is(pos, in) {
		pos++
	}
	return pos
}

// Character tests (see the comment above regexSplit).
func isSpace(c rune) bool      { return classOf(c)&clsSpace != 0 }
func isLetterC(c rune) bool    { return isL(classOf(c)) }
func isNumberC(c rune) bool    { return isN(classOf(c)) }
func isPunctC(c rune) bool     { f := classOf(c); return f&clsSpace == 0 && f&clsPunct != 0 }
func isMarkC(c rune) bool      { f := classOf(c); return f&clsSpace == 0 && f&clsMark != 0 }
func isSymbolC(c rune) bool    { f := classOf(c); return c != '~' && f&clsSpace == 0 && f&clsSymbol != 0 }
func isNewline(c rune) bool    { return c == '\r' || c == '\n' }
func isASCIIAlpha(c rune) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// inRanges reports whether c lies in one of the sorted, disjoint inclusive ranges rs.
func inRanges(c rune, rs [][2]rune) bool {
	lo, hi := 0, len(rs)
	for lo < hi {
		mid := (lo + hi) / 2
		switch {
		case c < rs[mid][0]:
			hi = mid
		case c > rs[mid][1]:
			lo = mid + 1
		default:
			return true
		}
	}
	return false
}

// matchOptSpaceRun matches \s?[in]+ (in never holds whitespace).
func matchOptSpaceRun(s *scanner, pos int, in func(rune) bool) int {
	start := pos
	if s.is(pos, isSpace) && s.is(pos+1, in) {
		start++
	}
	if end := s.run(start, in); end > start {
		return end - pos
	}
	return 0
}

// matchSpaceTail matches \s*[\r\n]+|\s+(?!\S)|\s+ at pos.
func matchSpaceTail(s *scanner, pos int) int {
	q, lastNL := pos, 0
	for s.is(q, isSpace) {
		if isNewline(s.cps[q]) {
			lastNL = q + 1
		}
		q++
	}
	switch {
	case q == pos:
		return 0
	case lastNL > 0: // \s*[\r\n]+
		return lastNL - pos
	case q < s.end && q-pos > 1: // \s+(?!\S), backing off the space before the \S
		return q - 1 - pos
	default: // \s+(?!\S) at the piece's end, or \s+
		return q - pos
	}
}

// splitEach makes every code point satisfying in a piece of its own (the pattern [in]).
func splitEach(cps []rune, pieces []int, in func(rune) bool) []int {
	return eachPiece(cps, pieces, func(s *scanner) {
		for pos := s.ini; pos < s.end; pos++ {
			if in(cps[pos]) {
				s.add(pos)
				s.add(pos + 1)
			}
		}
		s.add(s.end)
	})
}

// splitEachNumber is \p{N}: every number code point is a piece.
func splitEachNumber(cps []rune, pieces []int) []int { return splitEach(cps, pieces, isNumberC) }

// splitEachNewline is [\r\n]: every CR and LF is a piece.
func splitEachNewline(cps []rune, pieces []int) []int { return splitEach(cps, pieces, isNewline) }

// splitNumberTriples is \p{N}{1,3}: runs of numbers cut into threes from the left.
func splitNumberTriples(cps []rune, pieces []int) []int {
	return eachPiece(cps, pieces, func(s *scanner) {
		for pos := s.ini; pos < s.end; {
			if !isNumberC(cps[pos]) {
				pos++
				continue
			}
			s.add(pos)
			end := s.run(pos, isNumberC)
			for pos < end {
				pos = min(pos+3, end)
				s.add(pos)
			}
		}
		s.add(s.end)
	})
}

// splitFalconPunct is [\p{P}\$\+<=>\^~\|`]+: the default chain's class and the backtick.
func splitFalconPunct(cps []rune, pieces []int) []int {
	return splitRuns(cps, pieces, func(c rune) bool {
		switch c {
		case '$', '+', '<', '=', '>', '^', '~', '|', '`':
			return true
		}
		return isPunctC(c)
	})
}

// splitTrailingSpace is \s+$: the whitespace that ends a piece becomes a piece.
func splitTrailingSpace(cps []rune, pieces []int) []int {
	return eachPiece(cps, pieces, func(s *scanner) {
		pos := s.end
		for pos > s.ini && isSpace(cps[pos-1]) {
			pos--
		}
		s.add(pos)
		s.add(s.end)
	})
}

// deepSeekLetters is the letter class of llama.cpp's deepseek-llm pattern: cased Latin, Greek,
// Cyrillic, Armenian, Georgian, Cherokee and other scripts' letters, as explicit ranges.
var deepSeekLetters = [][2]rune{
	{0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA}, {0x1BC, 0x1BF},
	{0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F},
	{0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481},
	{0x48A, 0x52F}, {0x531, 0x556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD},
	{0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A},
	{0x1E00, 0x1F15}, {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57},
	{0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4},
	{0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3},
	{0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102},
	{0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124},
	{0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139},
	{0x213C, 0x213F}, {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B},
	{0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B},
	{0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06},
	{0xFB13, 0xFB17}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3},
	{0x104D8, 0x104FB}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
}

// deepSeekPunct is the class [!-/:-~！-／：-～‘-‟　-。] (U+3000 is whitespace, which never
// matches a range, so the last range starts at U+3001).
var deepSeekPunct = [][2]rune{
	{0x21, 0x2F}, {0x3A, 0x7E}, {0x2018, 0x201F}, {0x3001, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E},
}

func matchDeepSeekLetters(s *scanner, pos int) int {
	return matchOptSpaceRun(s, pos, func(c rune) bool { return inRanges(c, deepSeekLetters) })
}

func matchDeepSeekPunct(s *scanner, pos int) int {
	return matchOptSpaceRun(s, pos, func(c rune) bool { return inRanges(c, deepSeekPunct) })
}

// matchSpaceLetters is \s?\p{L}+.
func matchSpaceLetters(s *scanner, pos int) int { return matchOptSpaceRun(s, pos, isLetterC) }

// matchSpacePunct is \s?\p{P}+.
func matchSpacePunct(s *scanner, pos int) int { return matchOptSpaceRun(s, pos, isPunctC) }

// splitDeepSeekCJK is [一-龥ࠀ-一가-퟿]+ (U+4E00–U+9FA5, U+0800–U+4E00, U+AC00–U+D7FF).
func splitDeepSeekCJK(cps []rune, pieces []int) []int {
	return splitMatchRuns(cps, pieces, func(c rune) bool {
		return (c >= 0x800 && c <= 0x9FA5 || c >= 0xAC00 && c <= 0xD7FF) && !isSpace(c)
	})
}

// splitDeepSeekV3Kana is [一-龥぀-ゟ゠-ヿ]+ (U+4E00–U+9FA5, U+3040–U+30FF).
func splitDeepSeekV3Kana(cps []rune, pieces []int) []int {
	return splitMatchRuns(cps, pieces, func(c rune) bool {
		return c >= 0x4E00 && c <= 0x9FA5 || c >= 0x3040 && c <= 0x30FF
	})
}

// splitMatchRuns is the pattern [in]+: every maximal run of code points satisfying in is a
// piece, and so is the text between runs.
func splitMatchRuns(cps []rune, pieces []int, in func(rune) bool) []int {
	return splitRuns(cps, pieces, in)
}

// matchDeepSeekV3 is the last pattern of the DeepSeek V3 chain:
//
//	[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchDeepSeekV3(s *scanner, pos int) int {
	c := s.cps[pos]
	// An ASCII punctuation or symbol character, then ASCII letters.
	if c >= '!' && c <= '~' && !isASCIIAlpha(c) && !(c >= '0' && c <= '9') && s.is(pos+1, isASCIIAlpha) {
		return s.run(pos+1, isASCIIAlpha) - pos
	}
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
	lm := func(c rune) bool { return isLetterC(c) || isMarkC(c) }
	if !isNewline(c) && !isLetterC(c) && !isPunctC(c) && !isSymbolC(c) && s.is(pos+1, lm) {
		return s.run(pos+1, lm) - pos
	}
	if lm(c) {
		return s.run(pos, lm) - pos
	}
	// ' ?[\p{P}\p{S}]+[\r\n]*'
	ps := func(c rune) bool { return isPunctC(c) || isSymbolC(c) }
	start := pos
	if c == ' ' && s.is(pos+1, ps) {
		start++
	}
	if end := s.run(start, ps); end > start {
		return s.run(end, isNewline) - pos
	}
	return matchSpaceTail(s, pos)
}

// bloomStops are the code points besides whitespace that the Bloom pattern's class excludes.
var bloomStops = map[rune]bool{'(': true, '|': true, '.': true, ',': true, '!': true, '?': true, ')': true,
	'…': true, '。': true, '，': true, '、': true, '।': true, '۔': true, '،': true}

// matchBloom is " ?[^(\s|.,!?…。，、।۔،)]+".
func matchBloom(s *scanner, pos int) int {
	in := func(c rune) bool { return !isSpace(c) && !bloomStops[c] }
	start := pos
	if s.cps[pos] == ' ' && s.is(pos+1, in) {
		start++
	}
	if end := s.run(start, in); end > start {
		return end - pos
	}
	return 0
}

// matchTekken is the Tekken pattern (Mistral NeMo and later), as llama.cpp rewrites it:
//
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Over the collapsed text a non-ASCII letter is both "upper" (a letter, not a-z) and "lower" (a
// letter, not A-Z), so only ASCII letters have a case (matchCasedWord).
func matchTekken(s *scanner, pos int) int {
	if end := matchCasedWord(s, pos); end >= 0 {
		return end - pos
	}
	if isNumberC(s.cps[pos]) {
		return 1
	}
	return matchTekkenTail(s, pos)
}

// matchContraction matches (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]) at pos.
func matchContraction(s *scanner, pos int) int {
	if s.cpt(pos) != '\'' {
		return 0
	}
	next := asciiFold(s.cpt(pos + 1))
	switch next {
	case 's', 't', 'm', 'd':
		return 2
	}
	nn := asciiFold(s.cpt(pos + 2))
	if (next == 'r' && nn == 'e') || (next == 'v' && nn == 'e') || (next == 'l' && nn == 'l') {
		return 3
	}
	return 0
}

// matchCasedWord matches Tekken's two letter branches at pos: an optional prefix that is not
// a letter, number or newline, then upper* lower+ (or upper+ lower* when no lower follows),
// where over the collapsed text only ASCII letters have a case. It returns the end, or -1.
func matchCasedWord(s *scanner, pos int) int {
	upper := func(c rune) bool { return isLetterC(c) && !(c >= 'a' && c <= 'z') }
	lower := func(c rune) bool { return isLetterC(c) && !(c >= 'A' && c <= 'Z') }
	c := s.cps[pos]
	start := -1
	switch {
	case isLetterC(c):
		start = pos
	case !isNewline(c) && !isNumberC(c) && s.is(pos+1, isLetterC):
		start = pos + 1 // the optional prefix; without it neither branch can match a non-letter
	}
	if start < 0 {
		return -1
	}
	u := s.run(start, upper)
	for k := u; k >= start; k-- {
		if s.is(k, lower) {
			return s.run(k, lower)
		}
	}
	return s.run(u, lower)
}

// matchGPT4o is the o200k pattern of GPT-4o and Llama 4, as llama.cpp rewrites it: Tekken's
// cased words, each followed by an optional contraction, then \p{N}{1,3}, then Tekken's tail:
//
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|…|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|…|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchGPT4o(s *scanner, pos int) int {
	if end := matchCasedWord(s, pos); end >= 0 {
		return end + matchContraction(s, end) - pos
	}
	if isNumberC(s.cps[pos]) {
		return min(s.run(pos, isNumberC), pos+3) - pos
	}
	return matchTekkenTail(s, pos)
}

// matchTekkenTail is ' ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+' at pos.
func matchTekkenTail(s *scanner, pos int) int {
	other := func(c rune) bool { return !isSpace(c) && !isLetterC(c) && !isNumberC(c) }
	start := pos
	if s.cps[pos] == ' ' && s.is(pos+1, other) {
		start++
	}
	if end := s.run(start, other); end > start {
		return s.run(end, func(c rune) bool { return isNewline(c) || c == '/' }) - pos
	}
	return matchSpaceTail(s, pos)
}

// matchSeedCoder is Seed-Coder's pattern, Qwen2's without the newlines after punctuation:
//
//	(?:'[sS]|…|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+
func matchSeedCoder(s *scanner, pos int) int {
	if n := matchContraction(s, pos); n > 0 {
		return n
	}
	c := s.cps[pos]
	if isLetterC(c) {
		return s.run(pos, isLetterC) - pos
	}
	if !isNewline(c) && !isNumberC(c) && s.is(pos+1, isLetterC) {
		return s.run(pos+1, isLetterC) - pos
	}
	if isNumberC(c) {
		return 1
	}
	other := func(c rune) bool { return !isSpace(c) && !isLetterC(c) && !isNumberC(c) }
	start := pos
	if c == ' ' && s.is(pos+1, other) {
		start++
	}
	if end := s.run(start, other); end > start {
		return end - pos
	}
	return matchSpaceTail(s, pos)
}
