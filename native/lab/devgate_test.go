package lab

import (
	"testing"

	"github.com/kvlab/kvlab/native/kvq"
)

// TestDeviceGateCPU runs the device gate with the CPU backend: native/attn's fast paths over
// native/kvcache against the reference over the same cache.
func TestDeviceGateCPU(t *testing.T) {
	for _, name := range []string{"f16", "q8_0/q4_0", "q2k", "q2k/f16", "q2k-r/f16", "tq4"} {
		p, err := kvq.ParsePair(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, gc := range []DeviceGateCase{
			{Pair: p, HeadDim: 64, Cells: 300, Heads: 4, KVHeads: 2, Prefill: 17, Data: Outlier5, Seed: 7},
			{Pair: p, HeadDim: 128, Cells: 200, Heads: 2, KVHeads: 1, Window: 32, Sinks: 4, Data: Gaussian, Seed: 9},
		} {
			t.Run(gc.String(), func(t *testing.T) {
				r, err := RunDeviceGate(CPUGate, gc)
				if err != nil {
					t.Fatal(err)
				}
				if !r.OK {
					t.Errorf("gate failed: %+v", r)
				}
				t.Logf("decode %.2e, prefill %.2e (grid %v)", r.Decode, r.Prefill, r.QueryGrid)
			})
		}
	}
}
