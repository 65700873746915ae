package tokenizer_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/tokenizer"
)

// meta is an in-memory Metadata for synthetic vocabularies.
type meta map[string]any

func (m meta) String(k string) (string, bool) { v, ok := m[k].(string); return v, ok }
func (m meta) Bool(k string) (bool, bool)     { v, ok := m[k].(bool); return v, ok }
func (m meta) Strings(k string) ([]string, bool) {
	v, ok := m[k].([]string)
	return v, ok
}
func (m meta) Float32s(k string) ([]float32, bool) { v, ok := m[k].([]float32); return v, ok }
func (m meta) Int32s(k string) ([]int32, bool)     { v, ok := m[k].([]int32); return v, ok }
func (m meta) Uint(k string) (uint64, bool) {
	switch v := m[k].(type) {
	case uint32:
		return uint64(v), true
	case int32:
		return uint64(v), v >= 0
	}
	return 0, false
}
func (m meta) Int(k string) (int64, bool) {
	switch v := m[k].(type) {
	case uint32:
		return int64(v), true
	case int32:
		return int64(v), true
	}
	return 0, false
}

// spmMeta is a small SPM vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then words.
func spmMeta() meta {
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	scores := []float32{0, 0, 0}
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
		scores = append(scores, 0)
	}
	words := []struct {
		text  string
		score float32
	}{
		{"▁", -1}, {"a", -2}, {"b", -2}, {"c", -2}, {"ab", -3}, {"bc", -1.5}, {"▁a", -4}, {"▁ab", -2.5},
		{"<u>", -9}, {"<", -5}, {">", -5}, {"u", -5},
	}
	for _, w := range words {
		tokens = append(tokens, w.text)
		types = append(types, 1)
		scores = append(scores, w.score)
	}
	tokens[len(tokens)-4] = "<u>"
	types[len(tokens)-4] = 4 // user-defined
	return meta{
		tokenizer.KeyModel:     "llama",
		tokenizer.KeyTokens:    tokens,
		tokenizer.KeyScores:    scores,
		tokenizer.KeyTokenType: types,
	}
}

func newTok(t *testing.T, m meta) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.FromGGUF(m)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// texts maps ids to token texts, for readable failures.
func texts(tok *tokenizer.Tokenizer, ids []int32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = tok.TokenText(id)
	}
	return out
}

func TestSPMEncode(t *testing.T) {
	tok := newTok(t, spmMeta())
	tests := []struct {
		name         string
		text         string
		addSpecial   bool
		parseSpecial bool
		want         []string
	}{
		// bc (-1.5) merges before ab (-3), which then no longer applies; ▁a (-4) comes last.
		{"highest score merges first", "abc", false, false, []string{"▁a", "bc"}},
		{"dummy prefix joins the word", "ab", false, false, []string{"▁ab"}},
		{"spaces escape to ▁", "ab ab", false, false, []string{"▁ab", "▁ab"}},
		{"BOS with addSpecial", "a", true, false, []string{"<s>", "▁a"}},
		{"byte fallback", "é", false, false, []string{"▁", "<0xC3>", "<0xA9>"}},
		{"ill-formed byte kept", "a\xff", false, false, []string{"▁a", "<0xFF>"}},
		{"control text is plain text without parseSpecial", "</s>", false, false,
			[]string{"▁", "<", "<0x2F>", "<0x73>", ">"}},
		{"control token with parseSpecial", "a</s>a", false, true, []string{"▁a", "</s>", "▁a"}},
		{"user-defined token always", "a<u>b", false, false, []string{"▁a", "<u>", "▁", "b"}},
		{"empty", "", false, false, []string{}},
		{"empty with BOS", "", true, false, []string{"<s>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := texts(tok, tok.Encode(tt.text, tt.addSpecial, tt.parseSpecial))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Encode(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestSPMDecode(t *testing.T) {
	tok := newTok(t, spmMeta())
	id := func(s string) int32 {
		v, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return v
	}
	bos, eos := tok.BOS(), tok.EOS()
	tests := []struct {
		name string
		ids  []int32
		opt  tokenizer.DecodeOptions
		want string
	}{
		{"dummy prefix removed", []int32{id("▁ab"), id("▁ab")}, tokenizer.DecodeOptions{}, "ab ab"},
		{"only one space removed", []int32{id("▁"), id("▁ab")}, tokenizer.DecodeOptions{}, " ab"},
		{"bytes", []int32{id("<0xC3>"), id("<0xA9>")}, tokenizer.DecodeOptions{}, "é"},
		{"control hidden", []int32{bos, id("▁ab"), eos}, tokenizer.DecodeOptions{}, " ab"},
		{"control shown", []int32{bos, id("▁ab"), eos}, tokenizer.DecodeOptions{Special: true}, "<s> ab</s>"},
		{"BOS removed keeps the space", []int32{bos, id("▁ab")}, tokenizer.DecodeOptions{RemoveSpecial: true, Special: true}, " ab"},
		{"user-defined shown", []int32{id("<u>")}, tokenizer.DecodeOptions{}, "<u>"},
		{"out of range ignored", []int32{-1, 1 << 20, id("a")}, tokenizer.DecodeOptions{}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tok.Detokenize(tt.ids, tt.opt); got != tt.want {
				t.Errorf("Detokenize = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFromGGUFErrors(t *testing.T) {
	with := func(m meta, k string, v any) meta {
		c := meta{}
		for a, b := range m {
			c[a] = b
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	spm := spmMeta()
	n := len(spm[tokenizer.KeyTokens].([]string))
	bpe := meta{
		tokenizer.KeyModel:  "gpt2",
		tokenizer.KeyPre:    "gpt-2",
		tokenizer.KeyTokens: []string{"a", "b", "ab"},
		tokenizer.KeyMerges: []string{"a b"},
	}
	tests := []struct {
		name    string
		md      meta
		is      error
		mention string
	}{
		{"no model", with(spm, tokenizer.KeyModel, nil), tokenizer.ErrNoTokenizer, "no tokenizer"},
		{"model none", with(spm, tokenizer.KeyModel, "none"), tokenizer.ErrNoTokenizer, "no tokenizer"},
		{"unknown model", with(spm, tokenizer.KeyModel, "t5"), tokenizer.ErrUnsupported, `"t5"`},
		{"unknown pre", with(bpe, tokenizer.KeyPre, "chameleon"), tokenizer.ErrUnsupported, `"chameleon"`},
		{"no tokens", with(spm, tokenizer.KeyTokens, nil), tokenizer.ErrBadVocab, tokenizer.KeyTokens},
		{"empty tokens", with(spm, tokenizer.KeyTokens, []string{}), tokenizer.ErrBadVocab, "empty"},
		{"short scores", with(spm, tokenizer.KeyScores, make([]float32, n-1)), tokenizer.ErrBadVocab,
			fmt.Sprintf("%d entries for %d tokens", n-1, n)},
		{"scores not numbers", with(spm, tokenizer.KeyScores, []string{"x"}), tokenizer.ErrBadVocab, "not a numeric array"},
		{"long token types", with(spm, tokenizer.KeyTokenType, make([]int32, n+1)), tokenizer.ErrBadVocab,
			tokenizer.KeyTokenType},
		{"duplicate token", with(bpe, tokenizer.KeyTokens, []string{"a", "b", "a"}), tokenizer.ErrBadVocab,
			`duplicate token "a" has ids 0 and 2`},
		{"no merges", with(bpe, tokenizer.KeyMerges, nil), tokenizer.ErrBadVocab, tokenizer.KeyMerges},
		{"add_bos without bos", with(with(bpe, tokenizer.KeyAddBOS, true), tokenizer.KeyBOS, nil),
			tokenizer.ErrBadVocab, tokenizer.KeyAddBOS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tokenizer.FromGGUF(tt.md)
			if !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("err = %q, want it to mention %q", err, tt.mention)
			}
		})
	}
}

func TestSpecialIDs(t *testing.T) {
	m := spmMeta()
	m[tokenizer.KeyBOS] = uint32(2)
	m[tokenizer.KeyEOS] = uint32(1 << 30) // out of range: llama.cpp keeps the default
	m[tokenizer.KeyAddBOS] = false
	tok := newTok(t, m)
	if got := tok.BOS(); got != 2 {
		t.Errorf("BOS = %d, want 2", got)
	}
	if got := tok.EOS(); got != 2 {
		t.Errorf("EOS = %d, want the default 2", got)
	}
	if got := tok.Encode("a", true, false); len(got) != 1 {
		t.Errorf("Encode with add_bos false = %v, want no BOS", got)
	}
	if !tok.IsEOG(2) || tok.IsEOG(1) {
		t.Errorf("IsEOG(2), IsEOG(1) = %v, %v; want true, false", tok.IsEOG(2), tok.IsEOG(1))
	}
	if got := tok.TokenType(0); got != tokenizer.TypeUnknown {
		t.Errorf("TokenType(0) = %v, want unknown", got)
	}
}

func TestBPESynthetic(t *testing.T) {
	// "Ġ" is the byte-level character of the space.
	m := meta{
		tokenizer.KeyModel:     "gpt2",
		tokenizer.KeyPre:       "llama-bpe",
		tokenizer.KeyTokens:    []string{"h", "e", "l", "o", "Ġ", "he", "ll", "hell", "hello", "Ġh", "<|eot_id|>", "!"},
		tokenizer.KeyTokenType: []int32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1},
		tokenizer.KeyMerges:    []string{"h e", "l l", "he ll", "Ġ h"},
		tokenizer.KeyBOS:       uint32(10),
	}
	tok := newTok(t, m)
	tests := []struct {
		name string
		text string
		want []string
	}{
		// llama-bpe ignores merges for a word that is a whole token.
		{"whole word token", "hello", []string{"<|eot_id|>", "hello"}},
		// h e (rank 0) first, leftmost pair first on a tie, then l l, then he ll.
		{"merged by rank", "hellhe", []string{"<|eot_id|>", "hell", "he"}},
		// Ġ h (rank 3) loses to h e (rank 0) and no longer applies.
		{"space joins the word", " hello", []string{"<|eot_id|>", "Ġ", "hell", "o"}},
		{"unknown bytes dropped", "hé!", []string{"<|eot_id|>", "h", "!"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := texts(tok, tok.Encode(tt.text, true, false))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Encode(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
	if !tok.IsEOG(10) || !tok.IsControl(10) {
		t.Error("<|eot_id|> should end generation and be a control token")
	}
	if got := tok.EOT(); got != 10 {
		t.Errorf("EOT = %d, want 10 (found by its text)", got)
	}
}

func TestStream(t *testing.T) {
	tok := newTok(t, spmMeta())
	ids := tok.Encode("a€b", false, false) // € is three byte tokens
	s := tok.NewStream(false)
	var got []string
	for _, id := range ids {
		got = append(got, s.Add(id))
	}
	got = append(got, s.Flush())
	want := []string{" a", "", "", "€", "b", ""}
	if !slices.Equal(got, want) {
		t.Errorf("stream pieces = %q, want %q", got, want)
	}

	s = tok.NewStream(false)
	id := func(b byte) int32 { v, _ := tok.TokenID(fmt.Sprintf("<0x%02X>", b)); return v }
	if got := s.Add(id(0xE2)); got != "" {
		t.Errorf("lead byte alone gave %q, want it held back", got)
	}
	if got := s.Add(id('x')); got != "\xe2x" {
		t.Errorf("broken sequence gave %q, want the bytes passed through", got)
	}
	if got := s.Add(id(0xF0)) + s.Add(id(0x9F)) + s.Flush(); got != "\xf0\x9f" {
		t.Errorf("Flush gave %q, want the held bytes", got)
	}
}
