// Package grammar holds byte-level recognisers that constrained sampling runs over the text a
// model generates: a token may be sampled only when every byte of its text keeps the output a
// prefix of a valid document.
package grammar

// JSON recognises one JSON object (RFC 8259, the top-level value an object, as OpenAI's
// response_format json_object asks), byte by byte. The zero value is not ready: use NewJSON.
type JSON struct {
	st      state
	scratch []byte
}

// MaxWhitespace is the longest run of whitespace between tokens of the document that JSON
// accepts, so that a model cannot fill its budget with blank lines.
const MaxWhitespace = 16

// MaxLeadingWhitespace is the same before the object.
const MaxLeadingWhitespace = 2

type mode uint8

const (
	mValue      mode = iota // a value must come (after ':' or ',' in an array)
	mTop                    // the document's start: only '{' (after whitespace)
	mKeyOrEnd               // after '{': a key or '}'
	mKey                    // after ',' in an object: a key
	mColon                  // after a key: ':'
	mAfter                  // after a value: ',' or the closing bracket (or the end at the top)
	mValueOrEnd             // after '[': a value or ']'
	mString                 // inside a string
	mEscape                 // after '\' in a string
	mUnicode                // inside \uXXXX; hex counts the digits read
	mSign                   // after '-': a digit
	mZero                   // after a leading 0
	mInt                    // in the integer digits
	mDot                    // after '.': a digit
	mFrac                   // in the fraction digits
	mExp                    // after 'e': a sign or a digit
	mExpSign                // after the exponent's sign: a digit
	mExpInt                 // in the exponent digits
	mLiteral                // inside true, false or null; lit is what is left
	mDone                   // the object is closed: nothing more
)

type state struct {
	mode  mode
	key   bool   // the string being read is an object key
	hex   uint8  // digits of \u read, or of a number's exponent
	lit   string // the rest of a literal
	ws    int    // whitespace bytes in the current run
	stack []byte // '{' or '[' of each open container
}

// NewJSON returns a recogniser at the start of the document.
func NewJSON() *JSON { return &JSON{st: state{mode: mTop}} }

// Done reports that the object is complete.
func (j *JSON) Done() bool { return j.st.mode == mDone }

// Accept feeds text to the recogniser and reports whether it is still a valid prefix; on false
// the recogniser is unchanged.
func (j *JSON) Accept(text string) bool {
	t := j.st
	t.stack = append(j.scratch[:0], j.st.stack...)
	for i := 0; i < len(text); i++ {
		if !t.feed(text[i]) {
			j.scratch = t.stack
			return false
		}
	}
	j.scratch, j.st.stack = j.st.stack, t.stack
	j.st.mode, j.st.key, j.st.hex, j.st.lit, j.st.ws = t.mode, t.key, t.hex, t.lit, t.ws
	return true
}

// Allows reports whether text would keep the output a valid prefix, without feeding it.
func (j *JSON) Allows(text string) bool {
	if text == "" {
		return false
	}
	t := j.st
	t.stack = append(j.scratch[:0], j.st.stack...)
	ok := true
	for i := 0; i < len(text) && ok; i++ {
		ok = t.feed(text[i])
	}
	j.scratch = t.stack
	return ok
}

// Close returns the shortest text that completes the document from here ("" when done): the
// rest of a string, number or literal, a null for a missing value, and the closing brackets.
func (j *JSON) Close() string {
	t := j.st
	var b []byte
	switch t.mode {
	case mDone:
		return ""
	case mTop:
		return "{}"
	case mEscape:
		b = append(b, 'n', '"')
	case mUnicode:
		for i := t.hex; i < 4; i++ {
			b = append(b, '0')
		}
		b = append(b, '"')
	case mString:
		b = append(b, '"')
	case mSign, mDot, mExp, mExpSign:
		b = append(b, '0')
	case mLiteral:
		b = append(b, t.lit...)
	case mValue:
		b = append(b, "null"...)
	case mKey:
		b = append(b, `"":null`...)
	case mColon:
		b = append(b, ":null"...)
	}
	if (t.mode == mString || t.mode == mEscape || t.mode == mUnicode) && t.key {
		b = append(b, ":null"...)
	}
	for i := len(t.stack) - 1; i >= 0; i-- {
		if t.stack[i] == '{' {
			b = append(b, '}')
		} else {
			b = append(b, ']')
		}
	}
	return string(b)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// space takes a whitespace byte between tokens, up to MaxWhitespace in a run.
func (t *state) space() bool {
	t.ws++
	return t.ws <= MaxWhitespace
}

// value starts a value with byte c.
func (t *state) value(c byte) bool {
	t.ws = 0
	switch {
	case c == '{':
		t.stack = append(t.stack, '{')
		t.mode = mKeyOrEnd
	case c == '[':
		t.stack = append(t.stack, '[')
		t.mode = mValueOrEnd
	case c == '"':
		t.mode, t.key = mString, false
	case c == '-':
		t.mode = mSign
	case c == '0':
		t.mode = mZero
	case c >= '1' && c <= '9':
		t.mode = mInt
	case c == 't':
		t.mode, t.lit = mLiteral, "rue"
	case c == 'f':
		t.mode, t.lit = mLiteral, "alse"
	case c == 'n':
		t.mode, t.lit = mLiteral, "ull"
	default:
		return false
	}
	return true
}

// closeValue ends a value: the top-level object ends the document.
func (t *state) closeValue() {
	t.ws = 0
	if len(t.stack) == 0 {
		t.mode = mDone
	} else {
		t.mode = mAfter
	}
}

// after takes byte c after a complete value.
func (t *state) after(c byte) bool {
	if isSpace(c) {
		return t.space()
	}
	if len(t.stack) == 0 {
		return false
	}
	top := t.stack[len(t.stack)-1]
	switch {
	case c == ',' && top == '{':
		t.mode, t.ws = mKey, 0
	case c == ',' && top == '[':
		t.mode, t.ws = mValue, 0
	case c == '}' && top == '{', c == ']' && top == '[':
		t.stack = t.stack[:len(t.stack)-1]
		t.closeValue()
	default:
		return false
	}
	return true
}

func (t *state) feed(c byte) bool {
	switch t.mode {
	case mDone:
		return false
	case mTop:
		if isSpace(c) {
			t.ws++
			return t.ws <= MaxLeadingWhitespace
		}
		if c != '{' {
			return false
		}
		return t.value(c)
	case mValue:
		if isSpace(c) {
			return t.space()
		}
		return t.value(c)
	case mValueOrEnd:
		if isSpace(c) {
			return t.space()
		}
		if c == ']' {
			t.stack = t.stack[:len(t.stack)-1]
			t.closeValue()
			return true
		}
		return t.value(c)
	case mKeyOrEnd, mKey:
		if isSpace(c) {
			return t.space()
		}
		if c == '}' && t.mode == mKeyOrEnd {
			t.stack = t.stack[:len(t.stack)-1]
			t.closeValue()
			return true
		}
		if c != '"' {
			return false
		}
		t.mode, t.key, t.ws = mString, true, 0
		return true
	case mColon:
		if isSpace(c) {
			return t.space()
		}
		if c != ':' {
			return false
		}
		t.mode, t.ws = mValue, 0
		return true
	case mAfter:
		return t.after(c)
	case mString:
		switch {
		case c == '"':
			if t.key {
				t.mode, t.key, t.ws = mColon, false, 0
			} else {
				t.closeValue()
			}
		case c == '\\':
			t.mode = mEscape
		case c < 0x20:
			return false
		}
		return true
	case mEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			t.mode = mString
		case 'u':
			t.mode, t.hex = mUnicode, 0
		default:
			return false
		}
		return true
	case mUnicode:
		if !isHex(c) {
			return false
		}
		if t.hex++; t.hex == 4 {
			t.mode = mString
		}
		return true
	case mLiteral:
		if len(t.lit) == 0 || c != t.lit[0] {
			return false
		}
		if t.lit = t.lit[1:]; t.lit == "" {
			t.closeValue()
		}
		return true
	case mSign:
		switch {
		case c == '0':
			t.mode = mZero
		case c >= '1' && c <= '9':
			t.mode = mInt
		default:
			return false
		}
		return true
	case mZero, mInt, mFrac, mExpInt:
		switch {
		case isDigit(c) && t.mode == mExpInt:
			// Two exponent digits at most, so that every number is a finite float64.
			if t.hex++; t.hex > 2 {
				return false
			}
			return true
		case isDigit(c) && t.mode != mZero:
			return true
		case c == '.' && (t.mode == mZero || t.mode == mInt):
			t.mode = mDot
			return true
		case (c == 'e' || c == 'E') && t.mode != mExpInt:
			t.mode = mExp
			return true
		}
		// The number ends here; c belongs to what follows it.
		t.closeValue()
		return t.after(c)
	case mDot:
		if !isDigit(c) {
			return false
		}
		t.mode = mFrac
		return true
	case mExp:
		switch {
		case c == '+' || c == '-':
			t.mode = mExpSign
		case isDigit(c):
			t.mode, t.hex = mExpInt, 1
		default:
			return false
		}
		return true
	case mExpSign:
		if !isDigit(c) {
			return false
		}
		t.mode, t.hex = mExpInt, 1
		return true
	}
	return false
}
