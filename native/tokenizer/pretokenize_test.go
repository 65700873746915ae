package tokenizer

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// pieces splits text with p and returns the pieces as strings.
func pieces(p preTokenizer, text string) []string {
	cps := []rune(text)
	var out []string
	start := 0
	for _, n := range p.split(cps) {
		out = append(out, string(cps[start:start+n]))
		start += n
	}
	return out
}

var preByName = map[string]preTokenizer{
	"gpt2":           preGPT2,
	"llama3":         preLlama3,
	"qwen2":          preQwen2,
	"default":        preDefault,
	"falcon":         preFalcon,
	"starcoder":      preStarCoder,
	"deepseek-llm":   preDeepSeekLLM,
	"deepseek-coder": preDeepSeekCoder,
	"deepseek-v3":    preDeepSeekV3,
	"bloom":          preBloom,
	"viking":         preViking,
	"tekken":         preTekken,
	"gpt-4o":         preGPT4o,
	"seed-coder":     preSeedCoder,
	"bailingmoe":     preQwen2, // its pattern differs from Qwen2's in spelling only
}

// TestPreTokenizers checks each pre-tokenizer on hand-picked inputs.
func TestPreTokenizers(t *testing.T) {
	tests := []struct {
		name, pre, text string
		want            []string
	}{
		{"gpt2 words", "gpt2", "Hello world", []string{"Hello", " world"}},
		{"gpt2 contraction is case-sensitive", "gpt2", "I'VE I've", []string{"I", "'", "VE", " I", "'ve"}},
		{"gpt2 space before whitespace", "gpt2", "a  b", []string{"a", " ", " b"}},
		{"gpt2 trailing spaces stay whole", "gpt2", "a   ", []string{"a", "   "}},
		{"gpt2 numbers are not grouped", "gpt2", " 12345", []string{" 12345"}},
		{"llama3 contraction ignores case", "llama3", "I'VE", []string{"I", "'VE"}},
		{"llama3 digits in threes", "llama3", "1234567", []string{"123", "456", "7"}},
		{"llama3 newline run", "llama3", "a \n\n b", []string{"a", " \n\n", " b"}},
		{"llama3 punctuation takes newlines", "llama3", "!!\n\nx", []string{"!!\n\n", "x"}},
		{"qwen2 digits one by one", "qwen2", "x123", []string{"x", "1", "2", "3"}},
		{"qwen2 lone space at end", "qwen2", "a ", []string{"a", " "}},
		{"default punctuation runs", "default", "a+=b", []string{"a", "+=", "b"}},
		{"default digit triples", "default", "12345", []string{"123", "45"}},
		{"empty", "qwen2", "", nil},
		{"falcon backtick is punctuation", "falcon", "a`b", []string{"a", "`", "b"}},
		{"starcoder digits one by one", "starcoder", "x 42", []string{"x", " ", "4", "2"}},
		{"deepseek-llm newline alone", "deepseek-llm", "a\n\nb", []string{"a", "\n", "\n", "b"}},
		{"deepseek-llm trailing space", "deepseek-llm", "12  ", []string{"12", "  "}},
		{"deepseek-coder CJK run", "deepseek-coder", "中文 x", []string{"中文", " x"}},
		{"deepseek-v3 punctuation takes letters", "deepseek-v3", ".foo 1234", []string{".foo", " ", "123", "4"}},
		{"bloom stops", "bloom", "hi, you.", []string{"hi", ",", " you", "."}},
		{"viking digits", "viking", "ab12", []string{"ab", "1", "2"}},
		{"tekken camel case", "tekken", "HelloWORLD fooBar", []string{"Hello", "WORLD", " foo", "Bar"}},
		{"tekken slash", "tekken", "a//\nb", []string{"a", "//\n", "b"}},
		{"gpt-4o contraction joins the word", "gpt-4o", "HELLO'S don't 12345", []string{"HELLO'S", " don't", " ", "123", "45"}},
		{"seed-coder punctuation leaves newlines", "seed-coder", "x!!\n\ny", []string{"x", "!!", "\n\n", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pieces(preByName[tt.pre], tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("%s(%q) = %q, want %q", tt.pre, tt.text, got, tt.want)
			}
		})
	}
}

// TestDeepSeekRanges checks that the range tables are sorted, disjoint and hold no whitespace
// (the patterns they come from never match whitespace, which std::wregex sees as \v).
func TestDeepSeekRanges(t *testing.T) {
	for name, rs := range map[string][][2]rune{"letters": deepSeekLetters, "punct": deepSeekPunct} {
		for i, r := range rs {
			if r[0] > r[1] || i > 0 && r[0] <= rs[i-1][1] {
				t.Errorf("%s: range %d %X-%X is empty or out of order", name, i, r[0], r[1])
			}
			for c := r[0]; c <= r[1]; c++ {
				if isSpace(c) {
					t.Errorf("%s: range %X-%X holds whitespace %U", name, r[0], r[1], c)
				}
			}
		}
	}
}

// TestPreTokenizersMatchRegex checks the scanners against pieces computed by a backtracking
// regex engine (testdata/gen_pretokenize.py, Python's regex module, run over the text the way
// llama.cpp hands it to std::regex) for the patterns llama.cpp uses, on random text mixing
// letters of both cases, numbers, marks, punctuation, symbols, controls, CJK and kana, and ASCII
// and non-ASCII whitespace.
func TestPreTokenizersMatchRegex(t *testing.T) {
	data, err := os.ReadFile("testdata/pretokenize.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Text    string           `json:"text"`
		Lengths map[string][]int `json:"lengths"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for name, p := range preByName {
		t.Run(name, func(t *testing.T) {
			bad := 0
			for _, c := range cases {
				want, ok := c.Lengths[name]
				if !ok {
					t.Fatalf("%q: no pieces for %s", c.Text, name)
				}
				if len(want) == 0 {
					want = nil
				}
				if got := p.split([]rune(c.Text)); !slices.Equal(got, want) {
					bad++
					if bad <= 10 {
						t.Errorf("%q:\n got %q\nwant %q", c.Text, cut(c.Text, got), cut(c.Text, want))
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d cases differ", bad, len(cases))
			}
		})
	}
}

// cut returns the pieces of text whose lengths in code points are lengths.
func cut(text string, lengths []int) []string {
	cps := []rune(text)
	var out []string
	start := 0
	for _, n := range lengths {
		if start+n > len(cps) {
			return append(out, "<past the end>")
		}
		out = append(out, string(cps[start:start+n]))
		start += n
	}
	return out
}

// FuzzPreTokenize checks that every pre-tokenizer partitions arbitrary text into non-empty
// pieces, and that the Llama 3 and Qwen2 patterns, which differ only in \p{N}{1,3} against
// \p{N}, agree on text where no two numbers are adjacent.
func FuzzPreTokenize(f *testing.F) {
	for _, s := range []string{"", "Hello world", "a  \n\n b ", "I'VE 123 '", "\xff\x00 ½²"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cps := decodeCodepoints(nil, s)
		for name, p := range preByName {
			total := 0
			for _, n := range p.split(cps) {
				if n <= 0 {
					t.Fatalf("%s(%q): empty piece", name, s)
				}
				total += n
			}
			if total != len(cps) {
				t.Fatalf("%s(%q): pieces cover %d of %d code points", name, s, total, len(cps))
			}
		}
		for i := 1; i < len(cps); i++ {
			if isN(classOf(cps[i-1])) && isN(classOf(cps[i])) {
				return
			}
		}
		l3, q2 := preLlama3.split(cps), preQwen2.split(cps)
		if !slices.Equal(l3, q2) {
			t.Errorf("%q: llama3 %v, qwen2 %v", s, l3, q2)
		}
	})
}
