package lab

import (
	"testing"

	"github.com/kvlab/kvlab/native/kvq"
)

func TestGateFastPathsAgreeForEveryPair(t *testing.T) {
	for _, p := range GatePairs() {
		for _, d := range []int{8, 64} {
			r, err := RunGate(p, GateCase{Data: Outlier5, HeadDim: d, Cells: 300, Queries: 4, Seed: 1})
			if err != nil {
				t.Fatalf("%s d%d: %v", p, d, err)
			}
			if !r.FastOK {
				t.Errorf("%s d%d: fast path %.2e (bound %.3g), single-row ops %.2e (bound %g) from the reference",
					p, d, r.FastVsRef, r.FastBound, r.OpsVsRef, FastPathBound)
			}
		}
	}
}

func TestGateOrdersFormatsByPrecision(t *testing.T) {
	for _, data := range GateDatasets {
		err := map[string]float64{}
		for _, name := range []string{"f16", "q8_0", "q4_0"} {
			p, _ := kvq.ParsePair(name)
			r, e := RunGate(p, GateCase{Data: data, HeadDim: 64, Cells: 1024, Queries: 4, Seed: 2})
			if e != nil {
				t.Fatal(e)
			}
			err[name] = r.RelErr
		}
		if !(err["f16"] < 0.005 && err["f16"] < err["q8_0"] && 2*err["q8_0"] < err["q4_0"]) {
			t.Errorf("%s: f16 %.4f, q8_0 %.4f, q4_0 %.4f: want f16 < 0.5%% and f16 < q8_0 < q4_0/2", data, err["f16"], err["q8_0"], err["q4_0"])
		}
	}
}

func TestGateF32IsExact(t *testing.T) {
	r, err := RunGate(kvq.Pair{K: kvq.F32, V: kvq.F32}, GateCase{Data: Outlier75, HeadDim: 16, Cells: 200, Queries: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.RelErr > 1e-6 {
		t.Errorf("f32 cache differs from itself by %g", r.RelErr)
	}
}
