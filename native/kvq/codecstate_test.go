package kvq

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestSetStateRestores: a codec given another's state encodes and decodes alike.
func TestSetStateRestores(t *testing.T) {
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
	a.(RotationChooser).ChooseRotation(rows[:4*d], 4) // few rows: the alternates are tried
	if ChannelScalesOf(a) == nil || ChannelMeansOf(a) == nil {
		t.Fatal("the calibration rows set no scales or offsets")
	}
	if err := SetState(b, StateOf(a)); err != nil {
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
	bad := StateOf(a)
	bad.Scales = append([]float32(nil), bad.Scales...)
	bad.Scales[0] = 3
	if err := SetState(b, bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a scale of 3: %v, want ErrCorrupt", err)
	}
	plain, _ := NewCodec(F16, d, CodecOptions{})
	if err := SetState(plain, CodecState{Rotation: 2}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a rotation for f16: %v, want ErrCorrupt", err)
	}
	if err := SetState(b, CodecState{Rotation: 99}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("rotation 99: %v, want ErrCorrupt", err)
	}
	if err := SetState(plain, CodecState{Scales: ChannelScalesOf(a)}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("scales for f16: %v, want ErrCorrupt", err)
	}
}

// TestStateOfEveryRotation: each rotation ChooseRotation can pick round-trips through StateOf.
func TestStateOfEveryRotation(t *testing.T) {
	const d = 16
	opt := CodecOptions{Seed: 1, Layer: 0, Head: 3, Rotate: true}
	for rot := -1; rot <= chooseAlts; rot++ {
		a, _ := NewCodec(Q8_0, d, opt)
		if err := SetState(a, CodecState{Rotation: rot}); err != nil {
			t.Fatal(err)
		}
		if got := StateOf(a).Rotation; got != rot {
			t.Errorf("rotation %d reads back as %d", rot, got)
		}
	}
}
