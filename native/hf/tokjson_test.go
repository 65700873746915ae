package hf

import (
	"encoding/json"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// tokFromJSON builds the tokenizer that tokenizer.json (and tokenizer_config.json) convert to.
func tokFromJSON(t testing.TB, tj, tc []byte) *tokenizer.Tokenizer {
	t.Helper()
	kv, err := tokenizerMetadata(tj, tc, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Assemble(kv, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type vectorCase struct {
	text string
	want []int32
}

// readVectors reads llama.cpp's .inp/.out tokenizer vectors of a vocab fixture.
func readVectors(t *testing.T, name string) []vectorCase {
	t.Helper()
	inp, err := os.ReadFile(fixtures.Path(t, name+".inp"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(fixtures.Path(t, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	texts = texts[:len(texts)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d inputs, %d outputs", name, len(texts), len(lines))
	}
	var cases []vectorCase
	for i, text := range texts {
		var ids []int32
		for _, f := range strings.Fields(lines[i]) {
			v, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, int32(v))
		}
		cases = append(cases, vectorCase{text, ids})
	}
	return cases
}

// vocabOf reads the tokens, types and (BPE) merges of a vocab-only GGUF fixture.
func vocabOf(t *testing.T, name string) ([]string, []int32, []float32, []string) {
	t.Helper()
	f, err := gguf.Open(fixtures.Path(t, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	toks, _ := f.Strings(tokenizer.KeyTokens)
	types, _ := f.Int32s(tokenizer.KeyTokenType)
	scores, _ := f.Float32s(tokenizer.KeyScores)
	merges, _ := f.Strings(tokenizer.KeyMerges)
	return slices.Clone(toks), slices.Clone(types), slices.Clone(scores), slices.Clone(merges)
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGPT2TokenizerJSON writes the GPT-2 vocabulary as a byte-level BPE tokenizer.json, as the
// Hugging Face hub has it, and checks llama.cpp's test vectors through the conversion.
func TestGPT2TokenizerJSON(t *testing.T) {
	const name = "vocab/ggml-vocab-gpt-2.gguf"
	toks, types, _, merges := vocabOf(t, name)
	vocab := map[string]int{}
	var added []map[string]any
	for i, w := range toks {
		if types[i] == int32(tokenizer.TypeControl) {
			added = append(added, map[string]any{"id": i, "content": w, "special": true})
		}
		vocab[w] = i
	}
	tj := mustJSON(t, map[string]any{
		"added_tokens":   added,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": map[string]any{"type": "ByteLevel"},
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	})
	tc := mustJSON(t, map[string]any{"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": false})
	tok := tokFromJSON(t, tj, tc)
	if tok.Kind() != tokenizer.BPE || tok.Pre() != "gpt2" {
		t.Fatalf("kind %v pre %q", tok.Kind(), tok.Pre())
	}
	for i, c := range readVectors(t, name) {
		if got := tok.Encode(c.text, false, false); !slices.Equal(got, c.want) {
			t.Errorf("case %d %q: %v, want %v", i, c.text, got, c.want)
		}
	}
	// The pair form of merges (newer tokenizers) converts the same.
	pairs := make([][2]string, len(merges))
	for i, m := range merges {
		l, r, _ := strings.Cut(m[1:], " ")
		pairs[i] = [2]string{m[:1] + l, r}
	}
	var j map[string]any
	json.Unmarshal(tj, &j)
	j["model"].(map[string]any)["merges"] = pairs
	tok2 := tokFromJSON(t, mustJSON(t, j), tc)
	if got, want := tok2.Encode("Hello world, it's 2026!", false, false), tok.Encode("Hello world, it's 2026!", false, false); !slices.Equal(got, want) {
		t.Errorf("pair merges: %v, want %v", got, want)
	}
}

// TestSPMTokenizerJSON writes the Llama-2 SentencePiece vocabulary as the tokenizer.json the
// Hugging Face converter makes of it (BPE with byte fallback, merges ordered by the pieces'
// scores, the ▁ normalizer) and checks llama.cpp's test vectors through the conversion.
func TestSPMTokenizerJSON(t *testing.T) {
	const name = "vocab/ggml-vocab-llama-spm.gguf"
	toks, types, scores, _ := vocabOf(t, name)
	vocab := map[string]int{}
	var added []map[string]any
	for i, w := range toks {
		vocab[w] = i
		if types[i] == int32(tokenizer.TypeControl) || types[i] == int32(tokenizer.TypeUnknown) {
			added = append(added, map[string]any{"id": i, "content": w, "special": true})
		}
	}
	// Merges as the converter derives them: every split of a normal piece into two pieces,
	// ordered by the piece's score (then by the split's pieces' ids).
	type merge struct {
		l, r  string
		score float32
		a, b  int
	}
	var ms []merge
	for i, w := range toks {
		if types[i] != int32(tokenizer.TypeNormal) {
			continue
		}
		for k := range w {
			if k == 0 {
				continue
			}
			a, okA := vocab[w[:k]]
			b, okB := vocab[w[k:]]
			if okA && okB && types[a] == int32(tokenizer.TypeNormal) && types[b] == int32(tokenizer.TypeNormal) {
				ms = append(ms, merge{w[:k], w[k:], scores[i], a, b})
			}
		}
	}
	slices.SortStableFunc(ms, func(x, y merge) int {
		switch {
		case x.score != y.score:
			if x.score > y.score {
				return -1
			}
			return 1
		case x.a != y.a:
			return x.a - y.a
		}
		return x.b - y.b
	})
	var merges []string
	for _, m := range ms {
		merges = append(merges, m.l+" "+m.r)
	}
	tj := mustJSON(t, map[string]any{
		"added_tokens": added,
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}}},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"}}},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "byte_fallback": true, "unk_token": "<unk>"},
	})
	tc := mustJSON(t, map[string]any{"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true})
	tok := tokFromJSON(t, tj, tc)
	if tok.Kind() != tokenizer.SPM || tok.BOS() != 1 || tok.EOS() != 2 || !tok.AddBOS() {
		t.Fatalf("kind %v bos %d eos %d addBOS %v", tok.Kind(), tok.BOS(), tok.EOS(), tok.AddBOS())
	}
	fail := 0
	for i, c := range readVectors(t, name) {
		if got := tok.Encode(c.text, false, false); !slices.Equal(got, c.want) {
			fail++
			t.Errorf("case %d %q: %v, want %v", i, c.text, got, c.want)
		}
	}
}

// hfBPE is a reference Hugging Face BPE for the ▁-normalized, byte-fallback tokenizer.json of
// TinyStories-656K: the lowest-ranked adjacent merge first, leftmost on ties.
func hfBPE(vocab map[string]int, rank map[[2]string]int, text string) []int32 {
	s := "▁" + strings.ReplaceAll(text, " ", "▁")
	var parts []string
	for _, r := range s {
		parts = append(parts, string(r))
	}
	for {
		best, at := -1, -1
		for i := 0; i+1 < len(parts); i++ {
			if r, ok := rank[[2]string{parts[i], parts[i+1]}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		parts = append(parts[:at], append([]string{parts[at] + parts[at+1]}, parts[at+2:]...)...)
	}
	var out []int32
	for _, p := range parts {
		if id, ok := vocab[p]; ok {
			out = append(out, int32(id))
			continue
		}
		for _, b := range []byte(p) {
			out = append(out, int32(vocab["<0x"+strings.ToUpper(strconv.FormatUint(uint64(b)|0x100, 16)[1:])+">"]))
		}
	}
	return out
}

// TestTinyStoriesTokenizer compares the converted TinyStories-656K tokenizer with a reference
// merge-rank BPE on story text and odd strings.
func TestTinyStoriesTokenizer(t *testing.T) {
	dir := fixtures.Path(t, "TinyStories-656K")
	tj, err := os.ReadFile(dir + "/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	tc, _ := os.ReadFile(dir + "/tokenizer_config.json")
	tok := tokFromJSON(t, tj, tc)
	if tok.Kind() != tokenizer.SPM || tok.BOS() != 1 || tok.EOS() != 2 || !tok.AddBOS() || tok.VocabSize() != 2048 {
		t.Fatalf("kind %v bos %d eos %d addBOS %v vocab %d", tok.Kind(), tok.BOS(), tok.EOS(), tok.AddBOS(), tok.VocabSize())
	}
	var j tokenizerJSON
	if err := json.Unmarshal(tj, &j); err != nil {
		t.Fatal(err)
	}
	var vocab map[string]int
	json.Unmarshal(j.Model.Vocab, &vocab)
	merges, _ := parseMerges(j.Model.Merges)
	rank := map[[2]string]int{}
	for i, m := range merges {
		if _, ok := rank[m]; !ok {
			rank[m] = i
		}
	}
	texts := []string{
		"Once upon a time, there was a little girl named Lily. She had a toy car that she loved very much.",
		`Lily's mom said, "Lily, let's go to the park." Lily was sad and didn't know what to do.`,
		"The quick brown fox jumps over the lazy dog 1234567890 times!!",
		"  two  spaces and\ttabs\nnewlines  ", "ünïcödé — 東京 🙂", "", " ", "a", "Tom and Sam played ball",
	}
	for _, s := range strings.Fields("the a and was to he she it they big little happy sad day one saw wanted play friends mom dad ball tree bird dog cat park home") {
		texts = append(texts, s, "The "+s+" went home.")
	}
	// And random strings over a small alphabet (the merges compete most there).
	r := rand.New(rand.NewSource(1))
	alpha := []rune("abcdefghilmnoprstuwy ,.'")
	for range 5000 {
		b := make([]rune, 1+r.Intn(24))
		for k := range b {
			b[k] = alpha[r.Intn(len(alpha))]
		}
		texts = append(texts, string(b))
	}
	mismatch := 0
	for _, s := range texts {
		if !utf8.ValidString(s) {
			continue
		}
		got := tok.Encode(s, false, false)
		want := hfBPE(vocab, rank, s)
		if s == "" {
			want = nil
		}
		if !slices.Equal(got, want) {
			if mismatch++; mismatch <= 10 {
				t.Errorf("%q: %v, reference BPE %v", s, got, want)
			}
		}
	}
}
