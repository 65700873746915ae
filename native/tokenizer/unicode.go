package tokenizer

import "unicode"

// This file holds the Unicode helpers the tokenizers share. They follow llama.cpp's unicode.cpp
// rather than Go's unicode/utf8 where the two differ, because token ids must match llama.cpp's:
//
//   - decodeCodepoints accepts overlong forms and surrogates (as llama.cpp does) and turns each
//     byte that does not start a well-formed sequence into U+FFFD, consuming one byte.
//   - appendCodepoint encodes any value up to U+10FFFF, surrogates included.
//   - The character classes (letter, number, whitespace, …) are the Unicode general categories
//     and the White_Space property, as llama.cpp's generated tables are; they come from Go's
//     unicode package (Unicode 15.0.0).

// replacementChar is U+FFFD, the code point an ill-formed byte decodes to.
const replacementChar = 0xFFFD

// utf8Len returns the length of the UTF-8 sequence that lead byte b announces, from its high
// four bits only (1 for ASCII and for continuation bytes, as llama.cpp's unicode_len_utf8).
func utf8Len(b byte) int {
	switch b >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}

// decodeCodepoints appends the code points of s to dst and returns it. A lead byte must be
// followed by the continuation bytes it announces, or it decodes to U+FFFD and only that byte is
// consumed; a four-byte sequence above U+10FFFF is treated the same way (llama.cpp would throw on
// re-encoding it).
func decodeCodepoints(dst []rune, s string) []rune {
	for i := 0; i < len(s); {
		c, n := decodeCodepoint(s, i)
		dst = append(dst, c)
		i += n
	}
	return dst
}

// decodeCodepoint decodes the code point at s[i:] and returns it with the bytes it used.
func decodeCodepoint(s string, i int) (rune, int) {
	b0 := s[i]
	cont := func(k int) bool { return i+k < len(s) && s[i+k]&0xC0 == 0x80 }
	switch {
	case b0&0x80 == 0:
		return rune(b0), 1
	case b0&0x40 == 0:
		return replacementChar, 1
	case b0&0x20 == 0:
		if cont(1) {
			return rune(b0&0x1F)<<6 | rune(s[i+1]&0x3F), 2
		}
	case b0&0x10 == 0:
		if cont(1) && cont(2) {
			return rune(b0&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3
		}
	case b0&0x08 == 0:
		if cont(1) && cont(2) && cont(3) {
			c := rune(b0&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
			if c <= unicode.MaxRune {
				return c, 4
			}
		}
	}
	return replacementChar, 1
}

// appendCodepoint appends the UTF-8 encoding of c (at most U+10FFFF; surrogates are encoded
// like any other three-byte value) to dst.
func appendCodepoint(dst []byte, c rune) []byte {
	switch {
	case c < 0x80:
		return append(dst, byte(c))
	case c < 0x800:
		return append(dst, 0xC0|byte(c>>6), 0x80|byte(c)&0x3F)
	case c < 0x10000:
		return append(dst, 0xE0|byte(c>>12), 0x80|byte(c>>6)&0x3F, 0x80|byte(c)&0x3F)
	default:
		return append(dst, 0xF0|byte(c>>18)&0x07, 0x80|byte(c>>12)&0x3F, 0x80|byte(c>>6)&0x3F, 0x80|byte(c)&0x3F)
	}
}

// class is the set of llama.cpp character flags the pre-tokenizers test. Exactly one of the
// category bits (undefined … control) is set for a code point; whitespace may be set with any of
// them.
type class uint16

const (
	clsUndefined class = 1 << iota // Cn, and anything past U+10FFFF
	clsNumber                      // \p{N}
	clsLetter                      // \p{L}
	clsSeparator                   // \p{Z}
	clsMark                        // \p{M}
	clsPunct                       // \p{P}
	clsSymbol                      // \p{S}
	clsControl                     // \p{C} except Cn
	clsSpace                       // White_Space, which is what llama.cpp's \s matches
)

// asciiClass caches classOf for the ASCII range.
var asciiClass = func() (t [128]class) {
	for c := range t {
		t[c] = computeClass(rune(c))
	}
	return t
}()

// classOf returns the flags of code point c.
func classOf(c rune) class {
	if c >= 0 && c < 128 {
		return asciiClass[c]
	}
	return computeClass(c)
}

func computeClass(c rune) class {
	var f class
	switch {
	case c < 0 || c > unicode.MaxRune:
		return clsUndefined
	case unicode.IsLetter(c):
		f = clsLetter
	case unicode.IsNumber(c):
		f = clsNumber
	case unicode.IsMark(c):
		f = clsMark
	case unicode.IsPunct(c):
		f = clsPunct
	case unicode.IsSymbol(c):
		f = clsSymbol
	case unicode.Is(unicode.Z, c):
		f = clsSeparator
	case unicode.Is(unicode.C, c):
		f = clsControl
	default:
		f = clsUndefined
	}
	if unicode.IsSpace(c) {
		f |= clsSpace
	}
	return f
}
