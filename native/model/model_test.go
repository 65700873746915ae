package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// storiesGreedy is llama2.c's output for stories260K, greedy from BOS, 200 positions
// (../shared/models/README.md).
const storiesGreedy = `Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.
Lily's mom said, "Lily, let's go to the park." Lily was sad and didn't know what to do. She said, "I want to play with your ball, but I can't find it."
Lily was sad and didn't know what to do. She said, "I'm sorry, Lily. I didn't know what to do."
Lily didn't want to help her mom, so she`

// load opens a fixture model and its tokenizer, closing both when the test ends.
func load(t testing.TB, name string, threads int) (*Model, *tokenizer.Tokenizer) {
	t.Helper()
	m, err := Load(fixtures.Path(t, name), Options{Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		t.Fatal(err)
	}
	return m, tok
}

func newCache(t testing.TB, m *Model, kv string, cells int) *kvcache.Cache {
	t.Helper()
	pair, err := kvq.ParsePair(kv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kvcache.New(m.CacheConfig(pair, cells))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// greedy prefills prompt (one batch) and then generates n tokens greedily, or fewer when EOS
// comes: the n-th token is sampled from the logits of position len(prompt)+n−2, as llama2.c
// samples after each of its forward passes.
func greedy(t testing.TB, m *Model, c *kvcache.Cache, prompt []int32, n int, eos int32) []int32 {
	t.Helper()
	logits := make([]float32, m.Hparams.Vocab)
	if err := m.Forward(prompt, c, logits); err != nil {
		t.Fatal(err)
	}
	var out []int32
	for {
		next := sample.Argmax(logits)
		out = append(out, next)
		if next == eos || len(out) == n {
			return out
		}
		if err := m.Forward([]int32{next}, c, logits); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStoriesGreedyOracle reproduces llama2.c's greedy text for stories260K from BOS with f32
// and f16 KV, each with one and two threads: 200 forward passes (positions 0…199: BOS and 199
// generated tokens), each followed by a sample, so 200 generated tokens are printed.
func TestStoriesGreedyOracle(t *testing.T) {
	for _, kv := range []string{"f32", "f16"} {
		for _, threads := range []int{1, 2} {
			t.Run(kv+"/"+string(rune('0'+threads))+"threads", func(t *testing.T) {
				m, tok := load(t, "stories260K.gguf", threads)
				c := newCache(t, m, kv, 256)
				ids := greedy(t, m, c, []int32{tok.BOS()}, 200, tok.EOS())
				if len(ids) != 200 {
					t.Fatalf("generated %d tokens, want 200", len(ids))
				}
				if got := tok.Decode(ids); got != storiesGreedy {
					t.Fatalf("text differs from llama2.c at byte %d:\ngot:\n%s\nwant:\n%s", firstDiff(got, storiesGreedy), got, storiesGreedy)
				}
			})
		}
	}
}

func firstDiff(a, b string) int {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPrefillMatchesDecode checks that a batched prefill gives the logits of feeding the same
// tokens one at a time (attention and matrix products in batch vs single-token form).
func TestPrefillMatchesDecode(t *testing.T) {
	m, tok := load(t, "stories260K.gguf", 2)
	prompt := tok.Encode("Once upon a time, there was a little dog who liked to run in the park.", true, false)
	n, vocab := len(prompt), m.Hparams.Vocab
	batch := make([]float32, n*vocab)
	cb := newCache(t, m, "f32", 128)
	if err := m.Forward(prompt, cb, batch); err != nil {
		t.Fatal(err)
	}
	cs := newCache(t, m, "f32", 128)
	one := make([]float32, vocab)
	for i, id := range prompt {
		if err := m.Forward([]int32{id}, cs, one); err != nil {
			t.Fatal(err)
		}
		for j := range one {
			if d := one[j] - batch[i*vocab+j]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("position %d logit %d: decode %g, prefill %g", i, j, one[j], batch[i*vocab+j])
			}
		}
	}
	// Prefill in several passes (Batch 4) matches one pass.
	m.batch = 4
	defer func() { m.batch = 512 }()
	cp := newCache(t, m, "f32", 128)
	passes := make([]float32, n*vocab)
	if err := m.Forward(prompt, cp, passes); err != nil {
		t.Fatal(err)
	}
	for j := range passes {
		if d := passes[j] - batch[j]; d > 1e-4 || d < -1e-4 {
			t.Fatalf("value %d: passes of 4 %g, one pass %g", j, passes[j], batch[j])
		}
	}
}

// needlePrompt is the retrieval example of the fixtures README; kvlab-tiny-64 answers " 4821.".
const needlePrompt = "Tom had a big red ball. The secret number is 4821. He liked to play with it every day. His friend Sam came over and they played in the park. They ran and ran until the sun went down.\nWhat is the secret number? The secret number is"

// TestTiny64Retrieval checks the needle example on kvlab-tiny-64 (head_dim 64): greedy with
// f16 KV answers " 4821."; the other formats' answers are logged.
func TestTiny64Retrieval(t *testing.T) {
	m, tok := load(t, "kvlab-tiny-64.gguf", 2)
	ids := tok.Encode(needlePrompt, true, false)
	for _, kv := range []string{"f16", "q8_0", "q4_0", "q8_0/q4_0", "fp8", "tq4", "q2k"} {
		t.Run(strings.ReplaceAll(kv, "/", "-"), func(t *testing.T) {
			c := newCache(t, m, kv, 256)
			out := greedy(t, m, c, ids, 6, tok.EOS())
			var b strings.Builder
			for _, id := range out {
				b.WriteString(tok.Piece(id, false))
			}
			ok := strings.HasPrefix(b.String(), " 4821.")
			t.Logf("%-10s answers %q (retrieved: %v)", kv, b.String(), ok)
			if kv == "f16" && !ok {
				t.Fatalf("answer %q, want it to start with \" 4821.\"", b.String())
			}
		})
	}
}

func TestForwardErrors(t *testing.T) {
	m, tok := load(t, "stories260K.gguf", 1)
	vocab := m.Hparams.Vocab
	t.Run("context full", func(t *testing.T) {
		c := newCache(t, m, "f16", 4)
		if err := m.Forward([]int32{tok.BOS(), 5, 6}, c, nil); err != nil {
			t.Fatal(err)
		}
		err := m.Forward([]int32{7, 8}, c, make([]float32, vocab))
		if !errors.Is(err, kvcache.ErrKVFull) {
			t.Fatalf("error %v, want ErrKVFull", err)
		}
		if c.Len() != 3 {
			t.Fatalf("cache holds %d cells after the failed call, want 3", c.Len())
		}
		if err := m.Forward([]int32{7}, c, make([]float32, vocab)); err != nil {
			t.Fatalf("the last cell no longer fits: %v", err)
		}
	})
	for _, tc := range []struct {
		name   string
		tokens []int32
		logits int
	}{
		{"no tokens", nil, 0},
		{"token out of range", []int32{1, int32(vocab)}, 0},
		{"negative token", []int32{-1}, 0},
		{"bad logits length", []int32{1, 2}, vocab + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, m, "f16", 16)
			if err := m.Forward(tc.tokens, c, make([]float32, tc.logits)); err == nil {
				t.Fatal("no error")
			}
			if c.Len() != 0 {
				t.Fatalf("cache holds %d cells after an error", c.Len())
			}
		})
	}
	t.Run("wrong geometry", func(t *testing.T) {
		cfg := m.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, 16)
		cfg.KVHeads *= 2
		c, err := kvcache.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Forward([]int32{1}, c, nil); err == nil {
			t.Fatal("no error")
		}
	})
}

// TestEveryKVFormat runs greedy generation from BOS on stories260K (head_dim 8) with the KV
// cache in every format and reports, for each, how many of the 200 greedy tokens are identical
// to the f16 run (the common prefix, and position by position). Every format must produce text.
func TestEveryKVFormat(t *testing.T) {
	m, tok := load(t, "stories260K.gguf", 1)
	run := func(kv string) []int32 {
		c := newCache(t, m, kv, 256)
		return greedy(t, m, c, []int32{tok.BOS()}, 200, tok.EOS())
	}
	ref := run("f16")
	for _, kv := range []string{"f32", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl",
		"q8_0/q4_0", "f16/q4_0", "fp8", "tq4", "q2k", "q2k/q8_0"} {
		t.Run(strings.ReplaceAll(kv, "/", "-"), func(t *testing.T) {
			ids := run(kv)
			text := tok.Decode(ids)
			if strings.TrimSpace(text) == "" {
				t.Fatalf("%s produced no text", kv)
			}
			prefix, same := 0, 0
			for i := range min(len(ids), len(ref)) {
				if ids[i] == ref[i] {
					same++
					if prefix == i {
						prefix++
					}
				}
			}
			t.Logf("%-10s identical to f16: first %3d of %d tokens, %3d position by position; %q…",
				kv, prefix, len(ref), same, text[:min(len(text), 60)])
		})
	}
}

// TestConcurrentForward runs two generations on one model at once, each on its own cache,
// sharing the model's worker pool; both must reproduce the oracle.
func TestConcurrentForward(t *testing.T) {
	m, tok := load(t, "stories260K.gguf", 2)
	errs := make(chan string, 2)
	for range 2 {
		go func() {
			c, err := kvcache.New(m.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, 256))
			if err != nil {
				errs <- err.Error()
				return
			}
			logits := make([]float32, m.Hparams.Vocab)
			ids := []int32{}
			next := tok.BOS()
			for len(ids) < 200 {
				if err := m.Forward([]int32{next}, c, logits); err != nil {
					errs <- err.Error()
					return
				}
				next = sample.Argmax(logits)
				ids = append(ids, next)
			}
			if got := tok.Decode(ids); got != storiesGreedy {
				errs <- "text differs: " + got
				return
			}
			errs <- ""
		}()
	}
	for range 2 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}
