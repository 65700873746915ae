package lab

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/tokenizer"
)

func TestParseOutlierPairs(t *testing.T) {
	ps, err := ParseOutlierPairs("3:8, 11:16")
	if err != nil || len(ps) != 2 || ps[1] != (OutlierPair{11, 16}) {
		t.Fatalf("%v %v", ps, err)
	}
	for _, bad := range []string{"", "3", "x:8", "3:0", "-1:2", "3:-2"} {
		if _, err := ParseOutlierPairs(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestOutlierModelPreservesFunction: the outlier copy of the head_dim-64 fixture computes the
// same logits (power-of-two factors: exactly, with an f32 cache), its K cache has channels far
// above the rest, and the unrotated q4_0 cache collapses on it while the default rotated one
// (per-channel K scales) stays close to f16.
func TestOutlierModelPreservesFunction(t *testing.T) {
	src, err := gguf.Open(fixtures.Path(t, "kvlab-tiny-64.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), "outlier.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := OutlierModel(f, src, DefaultOutlierPairs); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	om, err := model.Load(path, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer om.Close()
	m, tok := loadModel(t, "kvlab-tiny-64.gguf")
	toks := tok.Encode("Once upon a time, there was a little girl named Mia. She had a red kite.", true, false)
	logits := func(mm *model.Model) []float32 {
		c, err := kvcache.New(mm.CacheConfig(kvq.Pair{K: kvq.F32, V: kvq.F32}, 64))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, len(toks)*mm.Hparams.Vocab)
		if err := mm.Forward(toks, c, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := logits(m), logits(om)
	for i := range a {
		if d := a[i] - b[i]; d > 1e-4 || d < -1e-4 {
			t.Fatalf("logit %d: %g vs %g", i, a[i], b[i])
		}
	}
	otok, err := tokenizer.FromGGUF(om.File())
	if err != nil {
		t.Fatal(err)
	}
	arms, _ := ParseArms("q4_0,q4_0-r", ArmDefaults{})
	rep, err := RunAB(context.Background(), om, otok, ABConfig{Arms: arms, N: 8, Ctx: 64, Needle: NeedleConfig{Skip: true}, SkipPPL: true})
	if err != nil {
		t.Fatal(err)
	}
	rot, raw := rep.Arms[0].Prompt.KLMean, rep.Arms[1].Prompt.KLMean
	t.Logf("outlier fixture prompt KL: q4_0 %.4f, q4_0-r %.4f", rot, raw)
	if !(rot < 0.1) || !(raw > 5*rot) {
		t.Errorf("prompt KL q4_0 %.4f, q4_0-r %.4f: want the rotated arm below 0.1 and far below the unrotated", rot, raw)
	}
}
