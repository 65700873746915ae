package model

import (
	"testing"

	"github.com/kvlab/kvlab/native/kvq"
)

// TestBOSValueNoWorseThanGGML: from an empty prompt (BOS only) the attention output of every
// layer is the BOS cell's V row, so its quantization error alone decides the first token (on
// kvlab-tiny-64 the f32 logits' top two differ by 0.04, and a rotated q4_0 V once flipped it,
// after which greedy decode looped). Each default (rotated) V format must store that row with
// no more error than ggml's unrotated quantizer of the same format.
func TestBOSValueNoWorseThanGGML(t *testing.T) {
	m, tok := load(t, "kvlab-tiny-64.gguf", 1)
	ref := newCache(t, m, "f32", 4)
	logits := make([]float32, m.Hparams.Vocab)
	if err := m.Forward([]int32{tok.BOS()}, ref, logits); err != nil {
		t.Fatal(err)
	}
	hp := m.Hparams
	for _, f := range []string{"q4_0", "q5_0", "q8_0", "iq4_nl", "q4_1", "q5_1"} {
		pair := "f16/" + f
		c := newCache(t, m, pair, 4)
		format, err := kvq.Parse(f)
		if err != nil {
			t.Fatal(err)
		}
		ggml, err := kvq.NewCodec(format, hp.HeadDimV, kvq.CodecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for l := 0; l < hp.Layers; l++ {
			_, rows := ref.Rows(l, false)
			v := make([]float32, hp.KVHeads*hp.HeadDimV)
			for h, r := range rows {
				r.Row(v[h*hp.HeadDimV:(h+1)*hp.HeadDimV], 0)
			}
			if err := c.Write(l, make([]float32, hp.KVHeads*hp.HeadDimK), v, 1); err != nil {
				t.Fatal(err)
			}
			_, got := c.Rows(l, false)
			for h := range rows {
				x := v[h*hp.HeadDimV : (h+1)*hp.HeadDimV]
				dec := make([]float32, hp.HeadDimV)
				got[h].Row(dec, 0)
				buf := make([]byte, ggml.RowBytes())
				ggml.Encode(buf, x)
				dg := make([]float32, hp.HeadDimV)
				ggml.Decode(dg, buf)
				var e, eg float64
				for i := range x {
					e += float64(x[i]-dec[i]) * float64(x[i]-dec[i])
					eg += float64(x[i]-dg[i]) * float64(x[i]-dg[i])
				}
				if e > eg {
					t.Errorf("%s layer %d head %d: BOS V squared error %.4g, ggml's %s %.4g", pair, l, h, e, f, eg)
				}
			}
		}
		if err := c.Commit(1); err != nil {
			t.Fatal(err)
		}
	}
}
