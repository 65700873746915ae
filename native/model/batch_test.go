package model

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/sample"
)

// TestForwardBatchMatchesAlone: three sequences at different lengths, run in one pass (two
// decoding a token each, one prefilling a chunk), give bit for bit the logits each gets run
// alone through ForwardBatch (the pass is batch-invariant), and Forward's within 1e-2 (its
// prefill sums in another order, and an f16 cache rounds the difference: the worst is logged).
// Greedy continuations then agree token for token over 40 batched steps with each sequence run
// alone.
func TestForwardBatchMatchesAlone(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "kvlab-tiny-64.gguf"} {
		t.Run(name, func(t *testing.T) {
			for _, kv := range []string{"f32", "f16", "q8_0"} {
				t.Run(kv, func(t *testing.T) { testForwardBatch(t, name, kv) })
			}
		})
	}
}

func testForwardBatch(t *testing.T, name, kv string) {
	m, tok := load(t, name, 2)
	vocab := m.Hparams.Vocab
	prompts := [][]int32{
		tok.Encode("Once upon a time, there was a little dog.", true, false),
		tok.Encode("Tom had a big red ball. He liked to play with it every day, and his friend Sam came.", true, false),
		tok.Encode("The sun was warm and the birds sang in the trees.", true, false),
	}
	one := func(c *kvcache.Cache, tokens []int32, logits []float32) {
		t.Helper()
		if err := m.ForwardBatch([]SeqStep{{Cache: c, Tokens: tokens, Logits: logits}}); err != nil {
			t.Fatal(err)
		}
	}
	// Alone: prefill all but the last 1, 1 and 5 tokens, then run the rest: the reference
	// logits of that rest (and Forward's, for the bound).
	rest := []int{1, 1, 5}
	alone, fwd := make([][]float32, 3), make([][]float32, 3)
	caches, aloneCaches := make([]*kvcache.Cache, 3), make([]*kvcache.Cache, 3)
	for i, p := range prompts {
		cut := len(p) - rest[i]
		c := newCache(t, m, kv, 128)
		if err := m.Forward(p[:cut], c, nil); err != nil {
			t.Fatal(err)
		}
		fwd[i] = make([]float32, vocab)
		if err := m.Forward(p[cut:], c, fwd[i]); err != nil {
			t.Fatal(err)
		}
		aloneCaches[i], caches[i] = newCache(t, m, kv, 128), newCache(t, m, kv, 128)
		one(aloneCaches[i], p[:cut], nil)
		one(caches[i], p[:cut], nil)
		alone[i] = make([]float32, vocab)
		one(aloneCaches[i], p[cut:], alone[i])
	}
	steps := make([]SeqStep, 3)
	for i, p := range prompts {
		steps[i] = SeqStep{Cache: caches[i], Tokens: p[len(p)-rest[i]:], Logits: make([]float32, vocab)}
	}
	if err := m.ForwardBatch(steps); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i := range steps {
		if caches[i].Len() != len(prompts[i]) {
			t.Fatalf("sequence %d holds %d cells, want %d", i, caches[i].Len(), len(prompts[i]))
		}
		for j, v := range steps[i].Logits {
			if v != alone[i][j] {
				t.Fatalf("sequence %d logit %d: batched %g, alone %g", i, j, v, alone[i][j])
			}
			d := math.Abs(float64(v - fwd[i][j]))
			worst = max(worst, d)
			if d > 1e-2 {
				t.Fatalf("sequence %d logit %d: batched %g, Forward %g", i, j, v, fwd[i][j])
			}
		}
	}
	t.Logf("%s %s: worst |batched − Forward| logit %.3g (batched = alone bit for bit)", name, kv, worst)

	// Greedy from there, batched, against each alone.
	const n = 40
	want := make([][]int32, 3)
	for i := range prompts {
		want[i] = append(want[i], sample.Argmax(alone[i]))
		for len(want[i]) < n {
			one(aloneCaches[i], want[i][len(want[i])-1:], alone[i])
			want[i] = append(want[i], sample.Argmax(alone[i]))
		}
	}
	got := make([][]int32, 3)
	for i := range steps {
		got[i] = append(got[i], sample.Argmax(steps[i].Logits))
	}
	for k := 1; k < n; k++ {
		for i := range steps {
			steps[i].Tokens = got[i][len(got[i])-1:]
		}
		if err := m.ForwardBatch(steps); err != nil {
			t.Fatal(err)
		}
		for i := range steps {
			got[i] = append(got[i], sample.Argmax(steps[i].Logits))
		}
	}
	for i := range got {
		for k := range got[i] {
			if got[i][k] != want[i][k] {
				t.Fatalf("sequence %d token %d: batched %d, alone %d", i, k, got[i][k], want[i][k])
			}
		}
	}
}

// TestForwardBatchAllLogits: a batch where one sequence asks for every row and another for
// none or the last gets the rows Forward gives alone.
func TestForwardBatchAllLogits(t *testing.T) {
	m, tok := load(t, "stories260K.gguf", 1)
	vocab := m.Hparams.Vocab
	a, b := tok.Encode("Once upon a time", true, false), tok.Encode("Lily saw a cat", true, false)
	ref := make([]float32, len(a)*vocab)
	if err := m.Forward(a, newCache(t, m, "f32", 64), ref); err != nil {
		t.Fatal(err)
	}
	refB := make([]float32, vocab)
	if err := m.Forward(b, newCache(t, m, "f32", 64), refB); err != nil {
		t.Fatal(err)
	}
	ca, cb, cc := newCache(t, m, "f32", 64), newCache(t, m, "f32", 64), newCache(t, m, "f32", 64)
	steps := []SeqStep{{Cache: ca, Tokens: a, Logits: make([]float32, len(a)*vocab)}, {Cache: cb, Tokens: b, Logits: make([]float32, vocab)},
		{Cache: cc, Tokens: b}}
	if err := m.ForwardBatch(steps); err != nil {
		t.Fatal(err)
	}
	for j := range ref {
		if d := math.Abs(float64(ref[j] - steps[0].Logits[j])); d > 1e-4 {
			t.Fatalf("all rows, value %d: %g, alone %g", j, steps[0].Logits[j], ref[j])
		}
	}
	for j := range refB {
		if d := math.Abs(float64(refB[j] - steps[1].Logits[j])); d > 1e-4 {
			t.Fatalf("last row, value %d: %g, alone %g", j, steps[1].Logits[j], refB[j])
		}
	}
	if cc.Len() != len(b) {
		t.Fatalf("the step without logits holds %d cells, want %d", cc.Len(), len(b))
	}
}

// TestForwardBatchErrors: bad inputs are refused before any work, every cache left as it was.
func TestForwardBatchErrors(t *testing.T) {
	m, _ := load(t, "stories260K.gguf", 1)
	vocab := m.Hparams.Vocab
	c1, c2 := newCache(t, m, "f32", 8), newCache(t, m, "f32", 8)
	for _, tc := range []struct {
		name  string
		steps []SeqStep
		full  bool
	}{
		{"none", nil, false},
		{"empty tokens", []SeqStep{{Cache: c1, Tokens: []int32{1}}, {Cache: c2}}, false},
		{"shared cache", []SeqStep{{Cache: c1, Tokens: []int32{1}}, {Cache: c1, Tokens: []int32{1}}}, false},
		{"bad logits", []SeqStep{{Cache: c1, Tokens: []int32{1}}, {Cache: c2, Tokens: []int32{1}, Logits: make([]float32, 3)}}, false},
		{"bad token", []SeqStep{{Cache: c1, Tokens: []int32{1}}, {Cache: c2, Tokens: []int32{int32(vocab)}}}, false},
		{"no cache", []SeqStep{{Cache: c1, Tokens: []int32{1}}, {Tokens: []int32{1}}}, false},
		{"full", []SeqStep{{Cache: c1, Tokens: []int32{1}}, {Cache: c2, Tokens: make([]int32, 9)}}, true},
	} {
		err := m.ForwardBatch(tc.steps)
		if err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		if tc.full != errors.Is(err, kvcache.ErrKVFull) {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c1.Len() != 0 || c2.Len() != 0 {
			t.Fatalf("%s: caches hold %d and %d cells after the error", tc.name, c1.Len(), c2.Len())
		}
	}
}

// TestMulRowwiseInvariant: for every weight type, a token's outputs of the invariant product
// are the same bit for bit whatever the number of tokens multiplied with it (1 to 19) and the
// threads (1 and 3, so the rows split differently), on shapes with odd row counts and column
// tails where the type allows them, and each is within float32 rounding (the integer kernels:
// their activation rounding) of MatVecReference.
func TestMulRowwiseInvariant(t *testing.T) {
	for _, threads := range []int{1, 3} {
		pool := NewPool(threads)
		defer pool.Close()
		for _, typ := range weightTypes {
			r := rand.New(rand.NewPCG(uint64(typ), 11))
			for _, shape := range [][2]int{{150, 512}, {37, 768}, {260, 172}} {
				rows, cols := shape[0], shape[1]
				if cols%typ.BlockSize() != 0 {
					continue
				}
				m, err := NewMatrix("w", typ, rows, cols, randomWeights(r, typ, rows, cols))
				if err != nil {
					t.Fatal(err)
				}
				const maxN = 19
				x := make([]float32, maxN*cols)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				one := make([]float32, maxN*rows)
				for tok := 0; tok < maxN; tok++ {
					m.mulRowwise(one[tok*rows:(tok+1)*rows], x[tok*cols:(tok+1)*cols], 1, pool)
				}
				for n := 2; n <= maxN; n++ {
					y := make([]float32, n*rows)
					m.mulRowwise(y, x, n, pool)
					for i, v := range y {
						if v != one[i] {
							t.Fatalf("%s %d×%d, %d threads: %d tokens: value %d is %g, alone %g", typ, rows, cols, threads, n, i, v, one[i])
						}
					}
				}
				ref := make([]float32, rows)
				for tok := 0; tok < maxN; tok += 6 {
					xt := x[tok*cols : (tok+1)*cols]
					if err := m.MatVecReference(ref, xt); err != nil {
						t.Fatal(err)
					}
					for i, v := range ref {
						var mag float64
						for j := 0; j < cols; j++ {
							mag += math.Abs(float64(xt[j]))
						}
						tol := 1e-5 * mag
						if m.intK {
							tol = 0.05 * mag // 8-bit activations
						}
						if d := math.Abs(float64(one[tok*rows+i] - v)); d > tol {
							t.Fatalf("%s %d×%d: token %d row %d: %g, reference %g", typ, rows, cols, tok, i, one[tok*rows+i], v)
						}
					}
				}
			}
		}
	}
}

// TestSpareStateSurvivesCollection: the pass state a call gave back is the next call's even
// after collections (which may empty a sync.Pool), so its scratch stays allocated and resident.
func TestSpareStateSurvivesCollection(t *testing.T) {
	m := &Model{}
	b := m.cpu()
	m.putCPU(b)
	runtime.GC()
	runtime.GC()
	if got := m.cpu(); got != b {
		t.Fatal("the state given back before two collections was not reused")
	}
	// Two at once: the second goes to the pool, the spare keeps one.
	b1, b2 := m.cpu(), m.cpu()
	m.putCPU(b1)
	m.putCPU(b2)
	if got := m.cpu(); got != b1 {
		t.Fatal("the spare is not the first state given back")
	}
}

// TestForwardBatchAttendAcross: passes of several short steps, whose attention runs across the
// pool by sequence (attendAcross) — five sequences of 1, 1, 1, 1 and 2 tokens (the two-token
// step on the shortest prompt, so that no sequence holds more than a thread's share of the
// work and the first pass takes attendAcross's prefill branch), then ten decode passes — give
// each sequence's logits bit for bit as the same steps run alone (attention on the caller),
// on 2 threads, for f32, f16 and q8_0 caches.
func TestForwardBatchAttendAcross(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "kvlab-tiny-64.gguf"} {
		for _, kv := range []string{"f32", "f16", "q8_0"} {
			t.Run(name+"/"+kv, func(t *testing.T) { testAttendAcross(t, name, kv) })
		}
	}
}

func testAttendAcross(t *testing.T, name, kv string) {
	m, tok := load(t, name, 2)
	vocab := m.Hparams.Vocab
	texts := []string{"Once upon a time, there was a little dog.", "Tom had a big red ball.",
		"The sun was warm and the birds sang in the trees.", "Lily went to the park with her mom.", "A cat sat."}
	rest := []int{1, 1, 1, 1, 2}
	steps, alone := make([]SeqStep, len(texts)), make([]SeqStep, len(texts))
	for i, s := range texts {
		p := tok.Encode(s, true, false)
		cut := len(p) - rest[i]
		for _, st := range []*SeqStep{&steps[i], &alone[i]} {
			c := newCache(t, m, kv, 128)
			if err := m.ForwardBatch([]SeqStep{{Cache: c, Tokens: p[:cut]}}); err != nil {
				t.Fatal(err)
			}
			*st = SeqStep{Cache: c, Tokens: p[cut:], Logits: make([]float32, vocab)}
		}
	}
	for pass := 0; pass <= 10; pass++ {
		if err := m.ForwardBatch(steps); err != nil {
			t.Fatal(err)
		}
		for i := range alone {
			if err := m.ForwardBatch(alone[i : i+1]); err != nil {
				t.Fatal(err)
			}
			for j, v := range steps[i].Logits {
				if math.Float32bits(v) != math.Float32bits(alone[i].Logits[j]) {
					t.Fatalf("pass %d sequence %d logit %d: batched %g, alone %g", pass, i, j, v, alone[i].Logits[j])
				}
			}
			next := []int32{sample.Argmax(alone[i].Logits)}
			steps[i].Tokens, alone[i].Tokens = next, next
		}
	}
}
