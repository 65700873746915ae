package calc

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/kvq"
)

func mustPair(t *testing.T, s string) kvq.Pair {
	t.Helper()
	p, err := kvq.ParsePair(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustPreset(t *testing.T, key string) ModelPreset {
	t.Helper()
	m, err := LookupPreset(key)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// seedRounded parses the seed's hand-rounded context figures ("43.7k", "1.07M").
func seedRounded(t *testing.T, s string) float64 {
	t.Helper()
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	}
	var v float64
	for i, part := range strings.SplitN(s, ".", 2) {
		var n float64
		for _, c := range part {
			n = n*10 + float64(c-'0')
		}
		if i == 0 {
			v = n
		} else {
			v += n / math.Pow(10, float64(len(part)))
		}
	}
	return v * mult
}

// TestSeed000SizeModel reproduces seed 000 §1 on Qwen2.5-14B-1M: KiB per token and the longest
// resident context at an 8 GiB and an 80 GiB KV budget.
func TestSeed000SizeModel(t *testing.T) {
	m := mustPreset(t, "qwen2.5-14b-1m").Shape
	for _, tc := range []struct {
		pair         string
		kib          float64
		at8, at80    int64  // exact: ⌊budget / bytes per token⌋
		seed8        string // the seed's rounded figures
		seed80       string
		short8, sh80 string // ShortCount's three significant digits
	}{
		{"f16", 192, 43690, 436906, "43.7k", "437k", "43.7k", "437k"},
		{"q8_0", 102, 82241, 822412, "82k", "822k", "82.2k", "822k"},
		{"q8_0/q4_0", 78, 107546, 1075462, "107k", "1.07M", "108k", "1.08M"},
		{"q5_0", 66, 127100, 1271001, "127k", "1.27M", "127k", "1.27M"},
		{"q4_0", 54, 155344, 1553445, "155k", "1.55M", "155k", "1.55M"},
	} {
		t.Run(tc.pair, func(t *testing.T) {
			p := mustPair(t, tc.pair)
			if got := ToKiB(m.BytesPerToken(p, 1)); got != tc.kib {
				t.Errorf("KiB/token = %g, want %g", got, tc.kib)
			}
			for _, c := range []struct {
				gib         int64
				want        int64
				seed, short string
			}{{8, tc.at8, tc.seed8, tc.short8}, {80, tc.at80, tc.seed80, tc.sh80}} {
				got := m.MaxResidentCtx(p, Overlay{}, c.gib*GiB, 1, 1)
				if got != c.want {
					t.Errorf("@%d GiB: max resident ctx %d, want %d", c.gib, got, c.want)
				}
				// The seed rounds by hand (107,546 → "107k", 82,241 → "82k"): within 0.6 %.
				if s := seedRounded(t, c.seed); math.Abs(float64(got)-s)/s > 0.006 {
					t.Errorf("@%d GiB: %d is not the seed's %s", c.gib, got, c.seed)
				}
				if s := ShortCount(got); s != c.short {
					t.Errorf("@%d GiB: ShortCount = %q, want %q", c.gib, s, c.short)
				}
			}
		})
	}
	// §1 headline: the native 1M context needs 192 GiB of f16 KV; q8K/q4V brings it to 78 GiB.
	if got := ToGiB(m.KVBytes(mustPair(t, "f16"), 1<<20, 1)); got != 192 {
		t.Errorf("f16 KV at 1Mi tokens = %g GiB, want 192", got)
	}
	if got := ToGiB(m.KVBytes(mustPair(t, "q8_0/q4_0"), 1<<20, 1)); got != 78 {
		t.Errorf("q8_0/q4_0 KV at 1Mi tokens = %g GiB, want 78", got)
	}
	// §1 boot log: 43008 cells of f16 = 8064 MiB.
	if got := ToMiB(m.KVBytes(mustPair(t, "f16"), 43008, 1)); got != 8064 {
		t.Errorf("43008 f16 cells = %g MiB, want 8064", got)
	}
}

// TestSeed000Policy reproduces seed 000 P1's validation on Qwen2.5-14B-1M at -c 32768 on the
// RTX 6000: as --vram-target tightens from 20000 to 19400 to 18800 MiB the budget is 3328, 2728
// and 2128 MiB and the policy picks q8_0/q8_0, q8_0/q4_0 and q5_1/q4_0. The budget is
// min(free, target) − already resident − 1.5 GiB reserve, so the runs had 20000 − 3328 − 1536 =
// 15136 MiB resident (weights and buffers) before the KV cache.
func TestSeed000Policy(t *testing.T) {
	m := mustPreset(t, "qwen2.5-14b-1m").Shape
	gpu, err := LookupHardware("rtx-6000-blackwell")
	if err != nil {
		t.Fatal(err)
	}
	const resident = 15136 * MiB
	for _, tc := range []struct {
		targetMiB, budgetMiB int64
		choice, reason       string
	}{
		{20000, 3328, "q8_0/q8_0", "q8_0/q8_0: KV 3264 MiB fits budget 3328 MiB"},
		{19400, 2728, "q8_0/q4_0", "q8_0/q4_0: KV 2496 MiB fits budget 2728 MiB"},
		{18800, 2128, "q5_1/q4_0", "q5_1/q4_0: KV 2016 MiB fits budget 2128 MiB"},
	} {
		t.Run(tc.choice, func(t *testing.T) {
			b := NewBudget(gpu.VRAMBytes, tc.targetMiB*MiB, resident, DefaultReserveBytes)
			if b.KVBytes != tc.budgetMiB*MiB {
				t.Fatalf("budget %g MiB, want %d", ToMiB(b.KVBytes), tc.budgetMiB)
			}
			for _, budget := range []Budget{b, GivenBudget(tc.budgetMiB * MiB)} {
				d, err := Decide(PolicyInput{Shape: m, Ctx: 32768, Sessions: 1, TP: 1, Budget: budget})
				if err != nil {
					t.Fatal(err)
				}
				if d.Format != tc.choice || d.Reason != tc.reason || !d.Fits || d.Floor {
					t.Errorf("got %s %q (fits %v floor %v), want %s %q", d.Format, d.Reason, d.Fits, d.Floor, tc.choice, tc.reason)
				}
			}
		})
	}
}

func TestPolicyRules(t *testing.T) {
	full := mustPreset(t, "qwen2.5-14b-1m").Shape
	iswa := mustPreset(t, "gemma-4-26b-a4b").Shape
	hybrid := mustPreset(t, "qwen3.6-35b-a3b").Shape
	for _, tc := range []struct {
		name     string
		in       PolicyInput
		choice   string
		fits     bool
		floor    bool
		user     bool
		contains string
	}{
		{"f16 fits", PolicyInput{Shape: full, Ctx: 32768, Sessions: 1, TP: 1, Budget: GivenBudget(8 * GiB)},
			"f16/f16", true, false, false, "f16/f16: KV 6144 MiB fits budget 8192 MiB"},
		{"floor spills", PolicyInput{Shape: full, Ctx: 131072, Sessions: 1, TP: 1, Budget: GivenBudget(2 * GiB)},
			"q5_1/q4_0", false, true, false, "q5_1/q4_0 (ladder floor): KV 8064 MiB exceeds budget 2048 MiB; 6016 MiB spills to host"},
		{"user respected", PolicyInput{Shape: full, Ctx: 32768, Sessions: 1, TP: 1, Budget: GivenBudget(8 * GiB), User: kvq.Pair{K: kvq.Q4_0, V: kvq.Q4_0}},
			"q4_0/q4_0", true, false, true, "q4_0/q4_0 (user-chosen): KV 1728 MiB fits budget 8192 MiB"},
		{"sessions stack", PolicyInput{Shape: full, Ctx: 32768, Sessions: 2, TP: 1, Budget: GivenBudget(8 * GiB)},
			"q8_0/q8_0", true, false, false, "q8_0/q8_0: KV 2 × 3264 MiB = 6528 MiB fits budget 8192 MiB"},
		{"tensor parallel halves heads", PolicyInput{Shape: full, Ctx: 32768, Sessions: 1, TP: 2, Budget: GivenBudget(4 * GiB)},
			"f16/f16", true, false, false, "f16/f16: KV 3072 MiB fits budget 4096 MiB"},
		{"iSWA stays f16", PolicyInput{Shape: iswa, Ctx: 131072, Sessions: 1, TP: 1, Budget: GivenBudget(8 * GiB)},
			"f16/f16", true, false, false, "a sliding window (iSWA) model stays f16 when f16 fits"},
		{"hybrid stays f16", PolicyInput{Shape: hybrid, Ctx: 131072, Sessions: 1, TP: 1, Budget: GivenBudget(8 * GiB)},
			"f16/f16", true, false, false, "a hybrid recurrent model stays f16 when f16 fits"},
		{"iSWA compresses when f16 does not fit", PolicyInput{Shape: iswa, Ctx: 1 << 20, Sessions: 1, TP: 1, Budget: GivenBudget(16 * GiB)},
			"q8_0/q8_0", true, false, false, "q8_0/q8_0: KV"},
		{"no memory left", PolicyInput{Shape: full, Ctx: 1024, Sessions: 1, TP: 1, Budget: NewBudget(24*GiB, 0, 23*GiB, DefaultReserveBytes)},
			"q5_1/q4_0", false, true, false, "exceeds budget 0 MiB; 63 MiB spills to host (what is resident and the compute reserve already exceed the memory by 512 MiB)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decide(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Format != tc.choice || d.Fits != tc.fits || d.Floor != tc.floor || d.UserChosen != tc.user || !strings.Contains(d.Reason, tc.contains) {
				t.Errorf("got %s fits=%v floor=%v user=%v %q; want %s fits=%v floor=%v user=%v containing %q",
					d.Format, d.Fits, d.Floor, d.UserChosen, d.Reason, tc.choice, tc.fits, tc.floor, tc.user, tc.contains)
			}
			if !d.Fits && d.SpillBytes != d.KVBytes-max(d.BudgetBytes, 0) {
				t.Errorf("spill %d, want KV − budget = %d", d.SpillBytes, d.KVBytes-max(d.BudgetBytes, 0))
			}
		})
	}
}

// TestLayerKinds checks how each kind of layer grows with the context.
func TestLayerKinds(t *testing.T) {
	f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}
	q8 := kvq.Pair{K: kvq.Q8_0, V: kvq.Q8_0}
	for _, tc := range []struct {
		name  string
		g     LayerGroup
		pair  kvq.Pair
		ctx   []int64
		bytes []int64 // expected KVBytes at each ctx
	}{
		{"full grows linearly", LayerGroup{Count: 2, Kind: Full, KVHeads: 4, HeadDimK: 128, HeadDimV: 64}, f16,
			[]int64{0, 1, 1000}, []int64{0, 2 * 4 * (256 + 128), 1000 * 2 * 4 * (256 + 128)}},
		{"sliding stops at the window", LayerGroup{Count: 3, Kind: Sliding, KVHeads: 8, HeadDimK: 256, HeadDimV: 256, Window: 1024}, f16,
			[]int64{512, 1024, 1025, 1 << 20}, []int64{512 * 3 * 8 * 1024, 1024 * 3 * 8 * 1024, 1024 * 3 * 8 * 1024, 1024 * 3 * 8 * 1024}},
		{"recurrent is constant and format-free", LayerGroup{Count: 30, Kind: Recurrent, StateBytes: 1 << 21}, q8,
			[]int64{0, 1, 1 << 20}, []int64{30 << 21, 30 << 21, 30 << 21}},
		{"latent keeps one row per token in K's format", LayerGroup{Count: 27, Kind: Latent, LatentDim: 576}, kvq.Pair{K: kvq.Q8_0, V: kvq.F16},
			[]int64{1, 4096}, []int64{27 * int64(kvq.Q8_0.RowBytes(576)), 4096 * 27 * int64(kvq.Q8_0.RowBytes(576))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Shape{Name: tc.name, Groups: []LayerGroup{tc.g}}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			for i, ctx := range tc.ctx {
				if got := s.KVBytes(tc.pair, ctx, 1); got != tc.bytes[i] {
					t.Errorf("ctx %d: %d bytes, want %d", ctx, got, tc.bytes[i])
				}
			}
		})
	}
}

// TestSeed000Vehicles checks the iSWA and hybrid presets against seed 000 §3c/§3d: ~20 KiB per
// token of f16 growth, measured as +1280 MiB of VRAM from 64k to 128k.
func TestSeed000Vehicles(t *testing.T) {
	f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}
	for _, key := range []string{"gemma-4-26b-a4b", "qwen3.6-35b-a3b"} {
		t.Run(key, func(t *testing.T) {
			s := mustPreset(t, key).Shape
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := ToKiB(s.BytesPerToken(f16, 1)); got != 20 {
				t.Errorf("f16 growth %g KiB/token, want 20", got)
			}
			if got := ToMiB(s.KVBytes(f16, 131072, 1) - s.KVBytes(f16, 65536, 1)); got != 1280 {
				t.Errorf("64k→128k: +%g MiB, want +1280", got)
			}
		})
	}
	if c := mustPreset(t, "gemma-4-26b-a4b").Shape.Class(); c != ClassSliding {
		t.Errorf("gemma class %v", c)
	}
	if c := mustPreset(t, "qwen3.6-35b-a3b").Shape.Class(); c != ClassHybrid {
		t.Errorf("qwen3.6 class %v", c)
	}
	if c := mustPreset(t, "deepseek-v2-lite").Shape.Class(); c != ClassLatent {
		t.Errorf("deepseek class %v", c)
	}
}

func TestTensorParallel(t *testing.T) {
	s := Shape{Name: "t", Groups: []LayerGroup{{Count: 1, Kind: Full, KVHeads: 8, HeadDimK: 128, HeadDimV: 128}}}
	f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}
	for _, tc := range []struct {
		tp    int
		heads int64
	}{{1, 8}, {2, 4}, {3, 3}, {8, 1}, {16, 1}} {
		if got, want := s.KVBytes(f16, 100, tc.tp), 100*tc.heads*512; got != want {
			t.Errorf("tp %d: %d bytes, want %d (%d heads)", tc.tp, got, want, tc.heads)
		}
	}
}

// TestOverlay reproduces seed 003's overlay footprint: 304 KiB per layer at window 128, sinks 8
// (16 slack cells) on 2 KV heads × 256, 3.56 MiB for 12 layers, 6.56 MiB at window 256.
func TestOverlay(t *testing.T) {
	s := Shape{Name: "seed 003", Groups: []LayerGroup{{Count: 12, Kind: Full, KVHeads: 2, HeadDimK: 256, HeadDimV: 256}}}
	q2k := mustPair(t, "q2k")
	one := Shape{Groups: []LayerGroup{{Count: 1, Kind: Full, KVHeads: 2, HeadDimK: 256, HeadDimV: 256}}}
	if got := ToKiB(float64(one.OverlayBytes(Overlay{Window: 128, Sinks: 8}, q2k, 1))); got != 304 {
		t.Errorf("per layer %g KiB, want 304", got)
	}
	for _, tc := range []struct {
		window int
		mib    string
	}{{128, "3.56"}, {256, "6.56"}} {
		got := ToMiB(s.OverlayBytes(Overlay{Window: tc.window, Sinks: 8}, q2k, 1))
		if FormatFixed(got, 2) != tc.mib {
			t.Errorf("window %d: %g MiB, want %s", tc.window, got, tc.mib)
		}
	}
	if got := s.OverlayBytes(Overlay{Window: 128, Sinks: 8}, kvq.Pair{K: kvq.F16, V: kvq.F16}, 1); got != 0 {
		t.Errorf("f16 bulk allocates no overlay, got %d bytes", got)
	}
	// Seed 003's q2k memory table: 1.31 GiB at 262144 cells.
	if got := FormatFixed(ToGiB(s.KVBytes(q2k, 262144, 1)), 2); got != "1.31" {
		t.Errorf("q2k at 262144: %s GiB, want 1.31", got)
	}
}

func TestMaxResidentCtx(t *testing.T) {
	iswaOnly := Shape{Name: "all sliding", Groups: []LayerGroup{{Count: 4, Kind: Sliding, KVHeads: 8, HeadDimK: 128, HeadDimV: 128, Window: 4096}}}
	f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}
	if got := iswaOnly.MaxResidentCtx(f16, Overlay{}, 1*GiB, 1, 1); got != Unbounded {
		t.Errorf("bounded cache under budget: %d, want Unbounded", got)
	}
	if got := iswaOnly.MaxResidentCtx(f16, Overlay{}, 8*MiB, 1, 1); got != 512 { // 16 KiB per token
		t.Errorf("bounded cache over budget: %d, want 512", got)
	}
	big := Shape{Name: "state", Groups: []LayerGroup{{Count: 1, Kind: Recurrent, StateBytes: 2 * GiB}}}
	if got := big.MaxResidentCtx(f16, Overlay{}, GiB, 1, 1); got != 0 {
		t.Errorf("state over budget: %d, want 0", got)
	}
	// q2k sizes whole 32-cell groups: the answer fits and one more token does not.
	m := mustPreset(t, "qwen2.5-14b-1m").Shape
	q2k := mustPair(t, "q2k")
	for _, budget := range []int64{GiB, 3*GiB + 12345, 8 * GiB} {
		n := m.MaxResidentCtx(q2k, Overlay{Window: 256, Sinks: 8}, budget, 3, 1)
		if 3*m.SessionBytes(q2k, Overlay{Window: 256, Sinks: 8}, n, 1) > budget || 3*m.SessionBytes(q2k, Overlay{Window: 256, Sinks: 8}, n+1, 1) <= budget {
			t.Errorf("budget %d: %d is not the longest fitting context", budget, n)
		}
	}
}

func TestBadInputs(t *testing.T) {
	m := mustPreset(t, "qwen2.5-14b-1m")
	gpu, _ := LookupHardware("rtx-3090")
	base := func() Request { return NewRequest(m.Shape, m.Quant, gpu) }
	for _, tc := range []struct {
		name   string
		mutate func(*Request)
		is     error
		says   string
	}{
		{"negative context", func(r *Request) { r.Ctx = -5 }, ErrBadInput, "context -5 tokens"},
		{"zero GPUs", func(r *Request) { r.GPUs = 0 }, ErrBadInput, "0 GPUs"},
		{"zero sessions", func(r *Request) { r.Sessions = 0 }, ErrBadInput, "0 sessions"},
		{"no formats", func(r *Request) { r.Pairs = nil }, ErrBadInput, "no KV formats"},
		{"q2k as V", func(r *Request) { r.Pairs = []kvq.Pair{{K: kvq.Q4_0, V: kvq.Q2K}} }, ErrBadInput, "q4_0/q2k"},
		{"unknown quant", func(r *Request) { r.Quant = "q3_xs" }, ErrUnknownPreset, "q3_xs"},
		{"no VRAM", func(r *Request) { r.GPU.VRAMBytes = 0 }, ErrBadInput, "memory"},
		{"negative overlay", func(r *Request) { r.Overlay.Window = -1 }, ErrBadInput, "overlay"},
		{"huge context", func(r *Request) { r.Ctx = MaxContext + 1 }, ErrBadInput, "limit"},
		{"no layers", func(r *Request) { r.Model.Groups = nil }, ErrBadShape, "no layers"},
		{"zero heads", func(r *Request) { r.Model.Groups = []LayerGroup{{Count: 4, Kind: Full, HeadDimK: 128, HeadDimV: 128}} }, ErrBadShape, "0 KV heads"},
		{"window on full layer", func(r *Request) {
			r.Model.Groups = []LayerGroup{{Count: 4, Kind: Full, KVHeads: 1, HeadDimK: 128, HeadDimV: 128, Window: 64}}
		}, ErrBadShape, "no window"},
		{"negative spill bandwidth", func(r *Request) { r.Spill.LinkGBps = -1 }, ErrBadInput, "link bandwidth"},
		{"absurd head dim", func(r *Request) {
			r.Model.Groups = []LayerGroup{{Count: 4, Kind: Full, KVHeads: 1, HeadDimK: 1 << 30, HeadDimV: 128}}
		}, ErrBadShape, "limit"},
		{"absurd growth", func(r *Request) {
			r.Model.Groups = []LayerGroup{{Count: 1 << 20, Kind: Full, KVHeads: 1 << 10, HeadDimK: 1 << 10, HeadDimV: 1 << 10}}
		}, ErrBadShape, "per token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.mutate(&r)
			_, err := Plan(r)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %v, want %v mentioning %q", err, tc.is, tc.says)
			}
		})
	}
	for _, name := range []string{"gpt-5", ""} {
		if _, err := LookupPreset(name); !errors.Is(err, ErrUnknownPreset) || !strings.Contains(err.Error(), "qwen2.5-14b-1m") {
			t.Errorf("LookupPreset(%q): %v", name, err)
		}
	}
	if _, err := LookupHardware("tpu-v9"); !errors.Is(err, ErrUnknownPreset) || !strings.Contains(err.Error(), "rtx-3090") {
		t.Errorf("LookupHardware: %v", err)
	}
}

func TestPlanReport(t *testing.T) {
	m := mustPreset(t, "qwen2.5-14b-1m")
	gpu, _ := LookupHardware("rtx-3090")
	r := NewRequest(m.Shape, m.Quant, gpu)
	r.Ctx = 65536
	rep, err := Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	weights := m.Shape.WeightBytesAt(WeightQuants()[2])
	if rep.WeightBytes != weights || rep.Quant != "q8_0" {
		t.Errorf("weights %d %s, want %d q8_0", rep.WeightBytes, rep.Quant, weights)
	}
	if want := gpu.VRAMBytes - weights - DefaultReserveBytes; rep.Budget.KVBytes != want {
		t.Errorf("budget %d, want VRAM − weights − reserve = %d", rep.Budget.KVBytes, want)
	}
	for _, row := range rep.Rows {
		if row.Fits != (row.KVBytes <= rep.Budget.KVBytes) {
			t.Errorf("%s: fits %v with KV %d and budget %d", row.Format, row.Fits, row.KVBytes, rep.Budget.KVBytes)
		}
		if row.TotalBytes != weights+row.KVBytes+DefaultReserveBytes {
			t.Errorf("%s: total %d", row.Format, row.TotalBytes)
		}
		if row.Sessions != rep.Budget.KVBytes/row.KVBytes {
			t.Errorf("%s: sessions %d", row.Format, row.Sessions)
		}
		// A spilling row decodes slower than the same pair fully resident.
		resident := Spill(m.Shape, row.Pair, Overlay{}, r.Ctx, Unbounded, rep.ActiveWeightBytes, 1, r.Spill).TPS
		if !row.Fits && row.DecodeTPS >= resident {
			t.Errorf("%s: spilled %g tok/s not below resident %g", row.Format, row.DecodeTPS, resident)
		}
	}
	if len(rep.Curves) != len(rep.Rows) || len(rep.Curves[0].Points) < curveSamples {
		t.Fatalf("curves: %d for %d rows", len(rep.Curves), len(rep.Rows))
	}
	for _, c := range rep.Curves {
		for i := 1; i < len(c.Points); i++ {
			if c.Points[i].Ctx <= c.Points[i-1].Ctx || c.Points[i].TPS > c.Points[i-1].TPS {
				t.Fatalf("%s: curve not increasing in ctx and non-increasing in tok/s at %d", c.Format, i)
			}
		}
	}
	// The context is past the native window of a 32k model: a warning, not an error.
	mistral := mustPreset(t, "mistral-7b")
	r = NewRequest(mistral.Shape, mistral.Quant, gpu)
	r.Ctx = 65536
	rep, err = Plan(r)
	if err != nil || len(rep.Warnings) == 0 || !strings.Contains(rep.Warnings[0], "past the 32768 the model was trained on") {
		t.Errorf("warnings %v, err %v", rep.Warnings, err)
	}
}

// TestSpillFitRecoversParameters fits points generated by known parameters.
func TestSpillFitRecoversParameters(t *testing.T) {
	m := mustPreset(t, "qwen2.5-14b-1m").Shape
	want := SpillParams{DeviceGBps: 900, LinkGBps: 20, OverheadMs: 3}
	w := m.WeightBytesAt(WeightQuants()[2])
	var pts []Measurement
	for _, c := range []struct {
		pair          string
		ctx, resident int64
	}{{"f16", 16384, 0}, {"f16", 65536, 30000}, {"q8_0", 131072, 0}, {"q4_0", 262144, 100000}, {"f16", 8192, 0}} {
		p := mustPair(t, c.pair)
		limit := Unbounded
		if c.resident > 0 {
			limit = c.resident
		}
		pts = append(pts, Measurement{Pair: p, Format: PairName(p), Ctx: c.ctx, ResidentCells: c.resident,
			TPS: Spill(m, p, Overlay{}, c.ctx, limit, w, 1, want).TPS})
	}
	got, err := Fit(m, w, pts, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"device", got.Params.DeviceGBps, want.DeviceGBps}, {"link", got.Params.LinkGBps, want.LinkGBps}, {"overhead", got.Params.OverheadMs, want.OverheadMs}} {
		if math.Abs(c.got-c.want)/c.want > 1e-4 {
			t.Errorf("%s: fitted %g, want %g", c.name, c.got, c.want)
		}
	}
	if got.RMSLogErr > 1e-6 || got.MaxRatio > 1+1e-6 {
		t.Errorf("exact data fitted with rms %g, max ratio %g", got.RMSLogErr, got.MaxRatio)
	}
	if _, err := Fit(m, w, nil, FitOptions{}); !errors.Is(err, ErrFit) {
		t.Errorf("no points: %v", err)
	}
	if _, err := Fit(m, w, []Measurement{{Pair: pts[0].Pair, Ctx: 100, TPS: 0}}, FitOptions{}); !errors.Is(err, ErrFit) {
		t.Errorf("zero tok/s: %v", err)
	}
}

// TestSeed000Calibration fits seed 000 §3a and checks that the tails the model charges are the
// seed's, computed from kvq. The fit quality is reported by `kvlab plan --calibrate`.
func TestSeed000Calibration(t *testing.T) {
	cal := Seed000Calibration()
	res, err := FitCalibration(cal)
	if err != nil {
		t.Fatal(err)
	}
	wantTail := map[int64]float64{32768: 0, 49152: 1152, 65536: 4224, 98304: 10368}
	for _, p := range res.Points {
		if p.Format != "f16/f16" {
			continue
		}
		if got := ToMiB(p.TailBytes); got != wantTail[p.Ctx] {
			t.Errorf("f16 @%d: tail %g MiB, want %g", p.Ctx, got, wantTail[p.Ctx])
		}
	}
	if res.Fitted != 4 || res.Params.DeviceGBps != 1792 || !(res.Params.LinkGBps > 0) {
		t.Errorf("fit %+v over %d points", res.Params, res.Fitted)
	}
	t.Logf("seed 000 §3a fit: link %.2f GB/s, overhead %.3f ms, rms log error %.3f, max ratio %.2f",
		res.Params.LinkGBps, res.Params.OverheadMs, res.RMSLogErr, res.MaxRatio)
}

func TestShortCount(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0"}, {512, "512"}, {999, "999"}, {1000, "1k"}, {43690, "43.7k"}, {131072, "131k"}, {999_499, "999k"},
		{999_500, "1M"}, {1_075_462, "1.08M"}, {Unbounded, "∞"}} {
		if got := ShortCount(tc.n); got != tc.want {
			t.Errorf("ShortCount(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
