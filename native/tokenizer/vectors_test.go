package tokenizer_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// load opens the GGUF fixture name and builds its tokenizer.
func load(t testing.TB, name string) *tokenizer.Tokenizer {
	t.Helper()
	f, err := gguf.Open(fixtures.Path(t, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tok
}

// vectorCase is one case of llama.cpp's tokenizer test vectors.
type vectorCase struct {
	text string
	want []int32
}

// readVectors reads the .inp/.out pair of the vocab fixture gguf (a name under the models
// directory).
func readVectors(t *testing.T, gguf string) []vectorCase {
	t.Helper()
	fixtures.Path(t, gguf+".inp")
	fixtures.Path(t, gguf+".out")
	return readVectorFiles(t, fixtures.Path(t, gguf))
}

// readVectorFiles reads path.inp and path.out: cases in .inp are each followed by
// "\n__ggml_vocab_test__\n"; .out has the expected ids of each case, one line per case.
func readVectorFiles(t *testing.T, path string) []vectorCase {
	t.Helper()
	name := filepath.Base(path)
	inp, err := os.ReadFile(path + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(path + ".out")
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if texts[len(texts)-1] != "" {
		t.Fatalf("%s.inp: does not end with a separator", name)
	}
	texts = texts[:len(texts)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d inputs but %d outputs", name, len(texts), len(lines))
	}
	cases := make([]vectorCase, len(texts))
	for i, text := range texts {
		var ids []int32
		for _, f := range strings.Fields(lines[i]) {
			v, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", name, i+1, err)
			}
			ids = append(ids, int32(v))
		}
		cases[i] = vectorCase{text, ids}
	}
	return cases
}

// TestLlamaCppVectors checks every case of llama.cpp's tokenizer test vectors: the ids without
// BOS (addSpecial false, parseSpecial false, as test-tokenizer-0 runs them).
func TestLlamaCppVectors(t *testing.T) {
	for _, vocab := range []string{"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf"} {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(vocab, "vocab/ggml-vocab-"), ".gguf"), func(t *testing.T) {
			tok := load(t, vocab)
			cases := readVectors(t, vocab)
			pass := 0
			for i, c := range cases {
				got := tok.Encode(c.text, false, false)
				if slices.Equal(got, c.want) {
					pass++
					continue
				}
				t.Errorf("case %d %q:\n got %v\nwant %v", i, c.text, got, c.want)
			}
			t.Logf("%d/%d cases match", pass, len(cases))
		})
	}
}

// TestVectorsRoundTrip decodes the test vectors back: Decode inverts Encode for the SPM vocab
// (spaces come back from "▁", the dummy prefix is dropped), and the pieces of the byte-level BPE
// vocab concatenate to the input.
func TestVectorsRoundTrip(t *testing.T) {
	t.Run("llama-spm", func(t *testing.T) {
		const vocab = "vocab/ggml-vocab-llama-spm.gguf"
		tok := load(t, vocab)
		for i, c := range readVectors(t, vocab) {
			if got := tok.Decode(tok.Encode(c.text, false, false)); got != c.text {
				t.Errorf("case %d: Decode(Encode(%q)) = %q", i, c.text, got)
			}
		}
	})
	t.Run("gpt-2", func(t *testing.T) {
		const vocab = "vocab/ggml-vocab-gpt-2.gguf"
		tok := load(t, vocab)
		for i, c := range readVectors(t, vocab) {
			var b strings.Builder
			for _, id := range tok.Encode(c.text, false, false) {
				b.WriteString(tok.Piece(id, false))
			}
			if b.String() != c.text {
				t.Errorf("case %d: pieces of %q join to %q", i, c.text, b.String())
			}
		}
	})
}

func TestStories260K(t *testing.T) {
	tok := load(t, "stories260K.gguf")
	if tok.Kind() != tokenizer.SPM || tok.VocabSize() != 512 {
		t.Fatalf("kind %v, vocab %d; want SPM, 512", tok.Kind(), tok.VocabSize())
	}
	if tok.BOS() != 1 || tok.EOS() != 2 || !tok.IsEOG(2) {
		t.Errorf("BOS %d, EOS %d, IsEOG(EOS) %v; want 1, 2, true", tok.BOS(), tok.EOS(), tok.IsEOG(2))
	}
	const text = "Once upon a time"
	ids := tok.Encode(text, true, false)
	if len(ids) < 2 || ids[0] != tok.BOS() {
		t.Fatalf("Encode(%q) = %v, want BOS first", text, ids)
	}
	for _, id := range ids[1:] {
		if tt := tok.TokenType(id); tt != tokenizer.TypeNormal {
			t.Errorf("token %d %q is %v; want words, not byte fallback", id, tok.TokenText(id), tt)
		}
	}
	if len(ids) > 1+len(strings.Fields(text))*2 {
		t.Errorf("Encode(%q) = %q: more tokens than expected", text, texts(tok, ids))
	}
	if got := tok.Decode(ids[1:]); got != text {
		t.Errorf("Decode = %q, want %q", got, text)
	}
	if got := tok.Detokenize(ids, tokenizer.DecodeOptions{RemoveSpecial: true}); got != " "+text {
		t.Errorf("Detokenize after BOS = %q, want %q (llama.cpp keeps the space after a removed BOS)", got, " "+text)
	}
	// Text the 512-token vocabulary has no pieces for falls back to bytes and comes back.
	const odd = "Ünïcödé 🦙 \x00\xff"
	if got := tok.Decode(tok.Encode(odd, false, false)); got != odd {
		t.Errorf("Decode(Encode(%q)) = %q", odd, got)
	}
}

func TestGPT2Special(t *testing.T) {
	tok := load(t, "vocab/ggml-vocab-gpt-2.gguf")
	eot, ok := tok.TokenID("<|endoftext|>")
	if !ok || !tok.IsEOG(eot) || tok.EOS() != eot {
		t.Fatalf("<|endoftext|> = %d (%v), EOS %d, IsEOG %v", eot, ok, tok.EOS(), tok.IsEOG(eot))
	}
	const text = "a<|endoftext|>b"
	if got := tok.Encode(text, false, true); !slices.Contains(got, eot) || len(got) != 3 {
		t.Errorf("parseSpecial: %q → %v, want a, <|endoftext|>, b", text, got)
	}
	if got := tok.Encode(text, false, false); slices.Contains(got, eot) {
		t.Errorf("no parseSpecial: %q → %v, must not hold <|endoftext|>", text, got)
	}
	if got := tok.Encode("x", true, false); len(got) != 1 {
		t.Errorf("gpt-2 adds no BOS: Encode(x, addSpecial) = %v", got)
	}
	tests := []struct{ in, want string }{
		{"Hello , world !", "Hello, world!"},
		{"I 'm here , he 's not", "I'm here, he's not"},
		{"don 't", "don 't"},
		{"a ' b", "a'b"},
	}
	for _, tt := range tests {
		t.Run("clean "+tt.in, func(t *testing.T) {
			if got := tok.Decode(tok.Encode(tt.in, false, false)); got != tt.want {
				t.Errorf("Decode(Encode(%q)) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
