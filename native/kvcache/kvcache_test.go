package kvcache

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

func randVec(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.NormFloat64())
	}
	return out
}

func relRMS(a, b []float32) float64 {
	var num, den float64
	for i := range a {
		e := float64(a[i] - b[i])
		num += e * e
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / den)
}

// valuesSlack is the relative tolerance the fast readers' values add for pair's V format of d
// values: 8·kvq.AccumulateStep (the weights rounded per tile of rows: 2⁻¹⁶, or 2⁻⁸ where the
// values kernels take 8-bit weights), 0 where they accumulate in float.
func valuesSlack(t *testing.T, p kvq.Pair, d int) float64 {
	t.Helper()
	c, err := kvq.NewCodec(p.V, d, kvq.CodecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return 8 * kvq.AccumulateStep(c)
}

func mustPair(t *testing.T, s string) kvq.Pair {
	t.Helper()
	p, err := kvq.ParsePair(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fill writes n cells to every layer in chunks and commits them, returning the raw K and V.
func fill(t *testing.T, c *Cache, r *rand.Rand, n, chunk int) (k, v []float32) {
	t.Helper()
	cfg := c.Config()
	for done := 0; done < n; done += chunk {
		m := min(chunk, n-done)
		kk := randVec(r, m*cfg.KVHeads*cfg.HeadDimK)
		vv := randVec(r, m*cfg.KVHeads*cfg.HeadDimV)
		for l := 0; l < cfg.Layers; l++ {
			if err := c.Write(l, kk, vv, m); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Commit(m); err != nil {
			t.Fatal(err)
		}
		k, v = append(k, kk...), append(v, vv...)
	}
	return k, v
}

func TestWriteCommitFull(t *testing.T) {
	c, err := New(Config{Layers: 2, KVHeads: 2, HeadDimK: 8, HeadDimV: 8, Pair: mustPair(t, "q8_0"), MaxCells: 10})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	fill(t, c, r, 8, 3)
	if c.Len() != 8 {
		t.Fatalf("Len = %d, want 8", c.Len())
	}
	err = c.Write(0, randVec(r, 3*16), randVec(r, 3*16), 3)
	if !errors.Is(err, ErrKVFull) {
		t.Fatalf("writing past capacity: %v, want ErrKVFull", err)
	}
	if err := c.Commit(1); err == nil {
		t.Fatal("commit of unwritten cells succeeded")
	}
}

func TestBytesExact(t *testing.T) {
	for _, tc := range []struct {
		pair          string
		window, sinks int
	}{{"f16", 0, 0}, {"q8_0/q4_0", 0, 0}, {"q4_0", 16, 4}, {"tq4", 0, 0}} {
		t.Run(tc.pair, func(t *testing.T) {
			p := mustPair(t, tc.pair)
			c, err := New(Config{Layers: 3, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: p, MaxCells: 100, Window: tc.window, Sinks: tc.sinks})
			if err != nil {
				t.Fatal(err)
			}
			want := 3*p.Bytes(100, 64, 64, 2) + 3*kvq.OverlayBytes(int64(tc.window+tc.sinks), 64, 64, 2)
			if got := c.Bytes(); got != want {
				t.Fatalf("Bytes = %d, want %d", got, want)
			}
		})
	}
}

// TestAttentionMatchesReference checks the fast readers against the reference readers of the
// same cache, with and without the overlay, for several formats and head dims.
func TestAttentionMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		pair          string
		d             int
		window, sinks int
	}{
		{"f32", 8, 0, 0}, {"f16", 16, 0, 0}, {"q8_0", 64, 0, 0}, {"q8_0/q4_0", 8, 0, 0},
		{"q4_0", 64, 32, 4}, {"tq4", 64, 16, 2}, {"fp8", 16, 8, 0}, {"q5_1/q4_0", 40, 0, 3},
	} {
		t.Run(tc.pair, func(t *testing.T) {
			cfg := Config{Layers: 1, KVHeads: 2, HeadDimK: tc.d, HeadDimV: tc.d, Pair: mustPair(t, tc.pair),
				MaxCells: 300, Window: tc.window, Sinks: tc.sinks, Seed: 7}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(2, uint64(tc.d)))
			fill(t, c, r, 250, 7)
			s := attn.Shape{Heads: 4, KVHeads: 2, HeadDimK: tc.d, HeadDimV: tc.d, Scale: float32(1 / math.Sqrt(float64(tc.d))), ChunkSize: 64, Threads: 2}
			q := randVec(r, 4*tc.d)
			for _, decode := range []bool{false, true} {
				ref := multiReference(t, c, decode, q, s)
				fast := make([]float32, 4*tc.d)
				if err := attn.Decode(fast, q, s, c.Keys(0, decode), c.Values(0, decode), 0, c.Len()); err != nil {
					t.Fatal(err)
				}
				if e := relRMS(fast, ref); e > 1e-4+valuesSlack(t, cfg.Pair, tc.d) {
					t.Errorf("decode=%v: fast differs from reference by %.2e", decode, e)
				}
			}
		})
	}
}

func TestOverlayReadsExactCells(t *testing.T) {
	const d, window, sinks, n = 32, 8, 3, 40
	c, err := New(Config{Layers: 1, KVHeads: 1, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, "q4_0"), MaxCells: 64, Window: window, Sinks: sinks})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	k, _ := fill(t, c, r, n, 5)
	dec, _ := c.Rows(0, true)
	pre, _ := c.Rows(0, false)
	row := make([]float32, d)
	for cell := 0; cell < n; cell++ {
		want := cell < sinks || cell >= n-window
		dec[0].Row(row, cell)
		exact := true
		for i, x := range row {
			if x != kvq.F16ToF32(kvq.F32ToF16(k[cell*d+i])) {
				exact = false
			}
		}
		if exact != want {
			t.Errorf("cell %d: reads exact f16 = %v, want %v", cell, exact, want)
		}
		pre[0].Row(row, cell)
		if e := relRMS(row, k[cell*d:(cell+1)*d]); e == 0 {
			t.Errorf("cell %d: prefill read is exact; it must read the quantized store", cell)
		}
	}
}

func TestTruncateThenRewriteMatchesFresh(t *testing.T) {
	// Without an overlay a truncated cache reads exactly like one written fresh. (Unrotated:
	// a rotated K store is calibrated from its first write, which differs between the two.)
	cfg := Config{Layers: 1, KVHeads: 1, HeadDimK: 16, HeadDimV: 16, Pair: mustPair(t, "q8_0-r/q4_0-r"), MaxCells: 64}
	a, _ := New(cfg)
	b, _ := New(cfg)
	r := rand.New(rand.NewPCG(4, 4))
	k, v := fill(t, a, r, 30, 30)
	if err := a.Truncate(20); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(0, k[:20*16], v[:20*16], 20); err != nil {
		t.Fatal(err)
	}
	b.Commit(20)
	ka, va := a.Rows(0, true)
	kb, vb := b.Rows(0, true)
	ra, rb := make([]float32, 16), make([]float32, 16)
	for cell := 0; cell < 20; cell++ {
		for i, pair := range [][2]attn.Rows{{ka[0], kb[0]}, {va[0], vb[0]}} {
			pair[0].Row(ra, cell)
			pair[1].Row(rb, cell)
			for j := range ra {
				if ra[j] != rb[j] {
					t.Fatalf("cell %d (%s) differs after truncate", cell, [2]string{"K", "V"}[i])
				}
			}
		}
	}
}

func TestTruncateDropsOverwrittenOverlayCopies(t *testing.T) {
	// A ring slot that a later (now truncated) cell overwrote no longer holds its cell: that
	// cell reads the quantized store until the window moves past it.
	const d = 16
	cfg := Config{Layers: 1, KVHeads: 1, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, "q4_0"), MaxCells: 64, Window: 4, Sinks: 1}
	c, _ := New(cfg)
	r := rand.New(rand.NewPCG(5, 5))
	k, _ := fill(t, c, r, 30, 30)
	if err := c.Truncate(20); err != nil {
		t.Fatal(err)
	}
	dec, _ := c.Rows(0, true)
	pre, _ := c.Rows(0, false)
	a, b := make([]float32, d), make([]float32, d)
	for cell := 16; cell < 20; cell++ {
		dec[0].Row(a, cell)
		pre[0].Row(b, cell)
		if relRMS(a, b) != 0 {
			t.Errorf("cell %d: overwritten copy still read as exact", cell)
		}
	}
	dec[0].Row(a, 0)
	for i := range a {
		if a[i] != kvq.F16ToF32(kvq.F32ToF16(k[i])) {
			t.Fatal("the sink lost its exact copy")
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	good := Config{Layers: 1, KVHeads: 1, HeadDimK: 8, HeadDimV: 8, Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}, MaxCells: 4}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"no layers", func(c *Config) { c.Layers = 0 }},
		{"head dim 4", func(c *Config) { c.HeadDimK = 4 }},
		{"zero capacity", func(c *Config) { c.MaxCells = 0 }},
		{"q2k as V", func(c *Config) { c.Pair.V = kvq.Q2K }},
		{"negative window", func(c *Config) { c.Window = -1 }},
		{"negative gain", func(c *Config) { c.KGain = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mod(&cfg)
			if _, err := New(cfg); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestQ2KCache(t *testing.T) {
	const d = 16
	cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, "q2k"), MaxCells: 100, KGain: 1.1, Window: 8, Sinks: 2}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := 2*2*(kvq.Q2K.Bytes(100, d, 1)+kvq.Q2KStagingBytes(d)) + 2*kvq.Q4_0.Bytes(100, d, 2) + 2*kvq.OverlayBytes(10, d, d, 2)
	if got := c.Bytes(); got != want {
		t.Errorf("Bytes = %d, want %d", got, want)
	}
	r := rand.New(rand.NewPCG(6, 6))
	fill(t, c, r, 70, 3)
	s := attn.Shape{Heads: 4, KVHeads: 2, HeadDimK: d, HeadDimV: d, Scale: 0.25, ChunkSize: 16, Threads: 2}
	q := randVec(r, 4*d)
	for _, decode := range []bool{false, true} {
		kr, vr := c.Rows(1, decode)
		ref, fast := make([]float32, 4*d), make([]float32, 4*d)
		if err := attn.DecodeReference(ref, q, s, kr, vr, 0, c.Len()); err != nil {
			t.Fatal(err)
		}
		if err := attn.Decode(fast, q, s, c.Keys(1, decode), c.Values(1, decode), 0, c.Len()); err != nil {
			t.Fatal(err)
		}
		if e := relRMS(fast, ref); e > 1e-4 {
			t.Errorf("decode=%v: fast differs from reference by %.2e", decode, e)
		}
	}
	if err := c.Truncate(40); !errors.Is(err, kvq.ErrUnsupported) {
		t.Errorf("truncating into a completed q2k group: %v, want ErrUnsupported", err)
	}
	if c.Len() != 70 {
		t.Fatalf("a refused truncate changed the cache: Len %d", c.Len())
	}
	if err := c.Truncate(65); err != nil {
		t.Errorf("truncating inside the last group: %v", err)
	}
}

// TestOverlayMultiQuery checks the overlay readers' multi-query paths against their
// single-query paths and the reference, including a cache truncated so that window slots hold
// cells that no longer read exact, and that a decode step through them allocates nothing.
func TestOverlayMultiQuery(t *testing.T) {
	for _, pair := range []string{"q4_0", "q8_0/q4_0", "q2k", "tq4", "f16"} {
		t.Run(pair, func(t *testing.T) {
			const d, window, sinks = 64, 16, 4
			cfg := Config{Layers: 1, KVHeads: 2, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, pair),
				MaxCells: 400, Window: window, Sinks: sinks, Seed: 3}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(4, 5))
			fill(t, c, r, 300, 7)
			if err := c.Truncate(290); err != nil { // slots of cells 290..299 now hold nothing exact
				t.Fatal(err)
			}
			fill(t, c, r, 5, 5)
			if _, ok := c.Keys(0, true)[0].(attn.MultiKeys); !ok {
				t.Fatal("overlay keys do not offer the multi-query path")
			}
			s := attn.Shape{Heads: 8, KVHeads: 2, HeadDimK: d, HeadDimV: d, Scale: 0.125, ChunkSize: 32, Threads: 1}
			q := randVec(r, 8*d)
			kr, vr := c.Rows(0, true)
			ref := make([]float32, 8*d)
			if err := attn.DecodeReference(ref, q, s, kr, vr, 0, c.Len()); err != nil {
				t.Fatal(err)
			}
			fast := make([]float32, 8*d)
			keys, vals := c.Keys(0, true), c.Values(0, true)
			if err := attn.Decode(fast, q, s, keys, vals, 0, c.Len()); err != nil {
				t.Fatal(err)
			}
			if e := relRMS(fast, multiReference(t, c, true, q, s)); e > 1e-4+valuesSlack(t, cfg.Pair, d) {
				t.Errorf("multi-query decode differs from the reference by %.2e", e)
			}
			// The single-query readers (the multi-query interfaces hidden) agree too.
			var sk []attn.Keys
			var sv []attn.Values
			for g := range keys {
				sk, sv = append(sk, struct{ attn.Keys }{keys[g]}), append(sv, struct{ attn.Values }{vals[g]})
			}
			single := make([]float32, 8*d)
			if err := attn.Decode(single, q, s, sk, sv, 0, c.Len()); err != nil {
				t.Fatal(err)
			}
			if e := relRMS(single, ref); e > 1e-4 {
				t.Errorf("single-query decode differs from the reference by %.2e", e)
			}
			if a := testing.AllocsPerRun(20, func() { _ = attn.Decode(fast, q, s, keys, vals, 0, c.Len()) }); a > 0 && !raceEnabled {
				t.Errorf("a decode step allocates %.1f times", a)
			}
		})
	}
}

func TestRotatedKCalibratedOnFirstWrite(t *testing.T) {
	// A rotated K store takes its per-channel scales and offsets from the first write into an
	// empty store and keeps them for later writes; Reset calibrates again.
	cfg := Config{Layers: 1, KVHeads: 1, HeadDimK: 16, HeadDimV: 16, Pair: mustPair(t, "q4_0"), MaxCells: 64}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := make([]float32, 8*16)
	for i := range k {
		k[i] = float32(i%5) - 2
		if i%16 == 3 {
			k[i] = 40 + float32(i%7) // an outlier channel with an offset
		}
	}
	v := make([]float32, len(k))
	if err := c.Write(0, k, v, 8); err != nil {
		t.Fatal(err)
	}
	codec := c.layers[0].k[0].(*rowStore).Codec
	lam, mu := kvq.ChannelScalesOf(codec), kvq.ChannelMeansOf(codec)
	if lam == nil || lam[3] < 8 || mu == nil || mu[3] < 40 {
		t.Fatalf("K not calibrated: λ %v μ %v", lam, mu)
	}
	if kvq.ChannelScalesOf(c.layers[0].v[0].(*rowStore).Codec) != nil {
		t.Error("V is calibrated")
	}
	c.Commit(8)
	if err := c.Write(0, make([]float32, 16), make([]float32, 16), 1); err != nil {
		t.Fatal(err)
	}
	if kvq.ChannelScalesOf(codec)[3] != lam[3] {
		t.Error("a later write recalibrated K")
	}
	c.Reset()
	if err := c.Write(0, make([]float32, 16), make([]float32, 16), 1); err != nil {
		t.Fatal(err)
	}
	if kvq.ChannelScalesOf(codec) != nil {
		t.Error("Reset kept the calibration")
	}
}

// gridKeys is a single-query K reader (the multi-query path hidden) whose prepared queries
// have their codec part rounded as the codec's multi-query scores round them (kvq.ScoresGrid).
type gridKeys struct {
	attn.Keys
	codec kvq.Codec
}

func (g gridKeys) Prepare(dst, q []float32) []float32 {
	pq := g.Keys.Prepare(dst, q)
	d := g.codec.Dim()
	kvq.ScoresGrid(g.codec, pq[:d], pq[:d], 1)
	return pq
}

// multiReference is what the multi-query decode of layer 0 must match within float rounding:
// the reference over the cache's rows where the K codec scores queries as they are; where it
// rounds them to an integer grid, the single-query readers on the same rounded queries (q2k's
// rounded per group; kvq's tests check the rounding against its stated bound).
func multiReference(t *testing.T, c *Cache, decode bool, q []float32, s attn.Shape) []float32 {
	t.Helper()
	out := make([]float32, s.Heads*s.HeadDimV)
	ly := c.layers[0]
	rs, ok := ly.k[0].(*rowStore)
	if ok && kvq.ScoresGrid(rs.Codec, make([]float32, s.HeadDimK), q[:s.HeadDimK], 1) > 0 {
		keys, vals := c.Keys(0, decode), c.Values(0, decode)
		var gk []attn.Keys
		var gv []attn.Values
		for g := range keys {
			gk = append(gk, gridKeys{keys[g], ly.k[g].(*rowStore).Codec})
			gv = append(gv, struct{ attn.Values }{vals[g]})
		}
		if err := attn.Decode(out, q, s, gk, gv, 0, c.Len()); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if gs, ok := ly.k[0].(*groupStore); ok && gs.h.ScoresGrid(make([]float32, s.HeadDimK), q[:s.HeadDimK], 0) {
		// q2k's kernel rounds the query afresh for every group: the single-query readers with
		// the base store scoring each cell with its group's grid query.
		keys, vals := c.Keys(0, decode), c.Values(0, decode)
		var gk []attn.Keys
		var gv []attn.Values
		for g := range keys {
			base := q2kGridStore{ly.k[g].(*groupStore)}
			k := attn.Keys(base)
			if ok, isOv := keys[g].(*overlayKeys); isOv {
				k = &overlayKeys{base: base, ov: ok.ov, head: ok.head, ly: ok.ly}
			}
			gk = append(gk, struct{ attn.Keys }{k})
			gv = append(gv, struct{ attn.Values }{vals[g]})
		}
		if err := attn.Decode(out, q, s, gk, gv, 0, c.Len()); err != nil {
			t.Fatal(err)
		}
		return out
	}
	kr, vr := c.Rows(0, decode)
	if err := attn.DecodeReference(out, q, s, kr, vr, 0, c.Len()); err != nil {
		t.Fatal(err)
	}
	return out
}

// q2kGridStore is a q2k store whose single-query Scores take the query as its multi-query
// kernel rounds it, group by group (kvq.Q2KHead.ScoresGrid), dotted with the cell as the store
// holds it (its scores leave out the rotated store's offset, as the store's do).
type q2kGridStore struct{ *groupStore }

func (s q2kGridStore) Scores(pq []float32, lo int, out []float32) {
	d := s.h.Dim()
	gq, row := make([]float32, d), make([]float32, d)
	for j := range out {
		s.h.ScoresGrid(gq, pq, (lo+j)/kvq.GroupCells)
		s.h.Decode(row, lo+j)
		var sum float64
		for c, x := range row {
			sum += float64(gq[c]) * float64(x)
		}
		out[j] = float32(sum)
	}
}

// TestQ2KFirstGroupCalibration checks that a rotated q2k pool calibrates from its whole first
// group however it was written: cells written one at a time hold the same K, bit for bit, as
// the same cells written as one write of the first group and then one at a time, and a
// truncation back into the first group and a rewrite of the same cells restores it.
func TestQ2KFirstGroupCalibration(t *testing.T) {
	const d, hn, cells = 32, 2, 40
	r := rand.New(rand.NewPCG(9, 9))
	k, v := randVec(r, cells*hn*d), randVec(r, cells*hn*d)
	for i := 0; i < cells*hn; i++ {
		k[i*d+5] = 16*k[i*d+5] + 4 // an outlier channel with an offset
	}
	mk := func(chunks ...int) *Cache {
		c, err := New(Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, "q2k"), MaxCells: 64, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		for pos, i := 0, 0; pos < cells; i++ {
			m := 1
			if i < len(chunks) {
				m = chunks[i]
			}
			if err := c.Write(0, k[pos*hn*d:(pos+m)*hn*d], v[pos*hn*d:(pos+m)*hn*d], m); err != nil {
				t.Fatal(err)
			}
			if err := c.Commit(m); err != nil {
				t.Fatal(err)
			}
			pos += m
		}
		return c
	}
	keys := func(c *Cache) []float32 {
		kr, _ := c.Rows(0, true)
		var out []float32
		row := make([]float32, d)
		for g := range kr {
			for i := 0; i < c.Len(); i++ {
				kr[g].Row(row, i)
				out = append(out, row...)
			}
		}
		return out
	}
	one, whole := keys(mk()), keys(mk(32))
	for i := range one {
		if math.Float32bits(one[i]) != math.Float32bits(whole[i]) {
			t.Fatalf("value %d: %v written a cell at a time, %v with the first group in one write", i, one[i], whole[i])
		}
	}
	c, err := New(Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, "q2k"), MaxCells: 64, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	write := func(pos, m int) {
		if err := c.Write(0, k[pos*hn*d:(pos+m)*hn*d], v[pos*hn*d:(pos+m)*hn*d], m); err != nil {
			t.Fatal(err)
		}
		if err := c.Commit(m); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 20)
	if err := c.Truncate(10); err != nil {
		t.Fatal(err)
	}
	for pos := 10; pos < cells; pos++ {
		write(pos, 1)
	}
	for i, x := range keys(c) {
		if math.Float32bits(x) != math.Float32bits(one[i]) {
			t.Fatalf("after a truncation into the first group, value %d = %v, want %v", i, x, one[i])
		}
	}

	// An empty write after a whole first group leaves it open to truncation (its last group
	// still starts at cell 0), so it must keep the group's cells.
	c, err = New(Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, "q2k"), MaxCells: 64, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	write(0, 32)
	write(32, 0)
	if err := c.Truncate(10); err != nil {
		t.Fatal(err)
	}
	for pos := 10; pos < cells; pos++ {
		write(pos, 1)
	}
	for i, x := range keys(c) {
		if math.Float32bits(x) != math.Float32bits(one[i]) {
			t.Fatalf("after an empty write and a truncation, value %d = %v, want %v", i, x, one[i])
		}
	}
}

// TestQ2KSoftCap checks a soft-capped decode (gemma2's tanh cap, which is not shift-invariant)
// over a rotated q2k pool with channel offsets against the reference over its decoded cells: the
// pool's scores must be q·x̂ itself, offset included.
func TestQ2KSoftCap(t *testing.T) {
	const d, hn = 16, 2
	for _, pair := range []string{"q2k", "q2k-r"} {
		c, err := New(Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, pair), MaxCells: 80, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(10, 11))
		k, v := randVec(r, 70*hn*d), randVec(r, 70*hn*d)
		for i := 0; i < 70*hn; i++ {
			k[i*d+3] += 3
			k[i*d+7] -= 2
		}
		if err := c.Write(0, k, v, 70); err != nil {
			t.Fatal(err)
		}
		if err := c.Commit(70); err != nil {
			t.Fatal(err)
		}
		q := randVec(r, 4*d)
		for i := range q {
			q[i] *= 4
		}
		for _, capv := range []float32{0, 5, 50} {
			s := attn.Shape{Heads: 4, KVHeads: hn, HeadDimK: d, HeadDimV: d, Scale: 0.25, ChunkSize: 16, Threads: 1, SoftCap: capv}
			kr, vr := c.Rows(0, true)
			ref, fast := make([]float32, 4*d), make([]float32, 4*d)
			if err := attn.DecodeReference(ref, q, s, kr, vr, 0, c.Len()); err != nil {
				t.Fatal(err)
			}
			if err := attn.Decode(fast, q, s, c.Keys(0, true), c.Values(0, true), 0, c.Len()); err != nil {
				t.Fatal(err)
			}
			if e := relRMS(fast, ref); e > 1e-4 {
				t.Errorf("%s, soft cap %g: decode differs from the reference by %.2e", pair, capv, e)
			}
		}
	}
}
