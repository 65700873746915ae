package kvq

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestSetCalibrationRestores: a codec given another's calibration encodes and decodes alike.
func TestSetCalibrationRestores(t *testing.T) {
	const d, n = 64, 40
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([]float32, n*d)
	for i := range rows {
		rows[i] = float32(r.NormFloat64())
		if i%d == 3 {
			rows[i] = 20 + rows[i] // an outlier channel with an offset
		}
	}
	opt := CodecOptions{Seed: 4, Layer: 1, Head: 2, Rotate: true}
	a, _ := NewCodec(Q4_0, d, opt)
	b, _ := NewCodec(Q4_0, d, opt)
	a.(Calibrator).Calibrate(rows, n)
	if ChannelScalesOf(a) == nil || ChannelMeansOf(a) == nil {
		t.Fatal("the calibration rows set no scales or offsets")
	}
	if err := SetCalibration(b, ChannelScalesOf(a), ChannelMeansOf(a)); err != nil {
		t.Fatal(err)
	}
	ea, eb := make([]byte, a.RowBytes()), make([]byte, b.RowBytes())
	a.Encode(ea, rows[:d])
	b.Encode(eb, rows[:d])
	if !bytes.Equal(ea, eb) {
		t.Error("the restored codec encodes differently")
	}
	da, db := make([]float32, d), make([]float32, d)
	a.Decode(da, ea)
	b.Decode(db, ea)
	for i := range da {
		if da[i] != db[i] {
			t.Fatalf("value %d decodes to %g, want %g", i, db[i], da[i])
		}
	}
	bad := append([]float32(nil), ChannelScalesOf(a)...)
	bad[0] = 3
	if err := SetCalibration(b, bad, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a scale of 3: %v, want ErrCorrupt", err)
	}
	plain, _ := NewCodec(F16, d, CodecOptions{})
	if err := SetCalibration(plain, ChannelScalesOf(a), nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("scales for f16: %v, want ErrCorrupt", err)
	}
}
