package kvq

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
)

// rotRowRef is the Go path of rotRowVec: (x − mu)·ilam, then rotation.apply's loops.
func rotRowRef(r *rotation, dst, src, mu, ilam []float32) {
	copy(dst, src[:r.d])
	for i := range dst[:r.d] {
		if mu != nil {
			dst[i] -= mu[i]
		}
		if ilam != nil {
			dst[i] *= ilam[i]
		}
		dst[i] *= r.sc[i]
	}
	fwht(dst[:r.d])
}

// TestRotRowVec: every rotation kernel this CPU runs writes the Go path's bits (no error
// bound: the same float32 operations on the same operands), for Gaussian rows with a few
// values ±0, subnormal, huge (sums overflowing to ±Inf) or NaN, with offsets and power-of-two
// scales and without, and with dst aliasing src. A lane or stage out of place (a wrong
// permutation, mask or blend, a sum kept in the upper lane, a register pair of a stage mixed
// up) changes values here.
func TestRotRowVec(t *testing.T) {
	ks := rotRowKernels()
	if len(ks) == 0 {
		t.Skip("no rotation kernel on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-40, -3e-39, 3e38, -3e38, float32(math.NaN()), float32(math.Inf(1))}
	for name, k := range ks {
		d := 64
		if name == "avx512/128" {
			d = 128
		}
		for trial := 0; trial < 200; trial++ {
			rot := newRotation(d, uint64(trial), trial%3, trial%5)
			src := make([]float32, d)
			for i := range src {
				src[i] = float32(rng.NormFloat64()) * float32(1+i%7)
			}
			if trial%4 == 3 {
				for j := 0; j < 3; j++ {
					src[rng.IntN(d)] = specials[rng.IntN(len(specials))]
				}
			}
			var mu, ilam []float32
			if trial%2 == 1 {
				mu, ilam = make([]float32, d), make([]float32, d)
				for i := range mu {
					mu[i] = float32(rng.NormFloat64())
					ilam[i] = float32(math.Ldexp(1, -rng.IntN(4)))
				}
			}
			want := make([]float32, d)
			rotRowRef(rot, want, src, mu, ilam)
			m, l := mu, ilam
			if m == nil {
				m, l = rotZeros[:d], rotOnes[:d]
			}
			got := make([]float32, d)
			k(&got[0], &src[0], &rot.sc[0], &m[0], &l[0])
			alias := append([]float32(nil), src...)
			k(&alias[0], &alias[0], &rot.sc[0], &m[0], &l[0])
			for i := range want {
				w := math.Float32bits(want[i])
				if g := math.Float32bits(got[i]); g != w && !(want[i] != want[i] && got[i] != got[i]) {
					t.Fatalf("%s trial %d: value %d = %v, Go path %v", name, trial, i, got[i], want[i])
				}
				if g := math.Float32bits(alias[i]); g != w && !(want[i] != want[i] && alias[i] != alias[i]) {
					t.Fatalf("%s trial %d: in place, value %d = %v, Go path %v", name, trial, i, alias[i], want[i])
				}
			}
		}
	}
}

// TestRotRowTVec: every transposed rotation kernel this CPU runs writes rotation.applyT's Go
// loops' bits (the transform, then the signs over √d; no error bound, the same float32
// operations), in place and not, for the rows of TestRotRowVec; and RᵀR·x returns x within
// rotation's bound (log2(d)·2⁻²³ relative, taken as 1e-5 of the row's largest magnitude) with
// both kernels, so that a kernel that mirrored a mistake of the other would fail.
func TestRotRowTVec(t *testing.T) {
	ks := rotRowTKernels()
	if len(ks) == 0 {
		t.Skip("no rotation kernel on this CPU or build")
	}
	defer setRotVec(true)
	rng := rand.New(rand.NewPCG(47, 48))
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-40, 3e38, float32(math.NaN()), float32(math.Inf(-1))}
	for name, k := range ks {
		d := 64
		if name == "avx512/128" {
			d = 128
		}
		for trial := 0; trial < 200; trial++ {
			rot := newRotation(d, uint64(trial)+7, trial%3, trial%5)
			src := make([]float32, d)
			for i := range src {
				src[i] = float32(rng.NormFloat64()) * float32(1+i%7)
			}
			if trial%4 == 3 {
				for j := 0; j < 3; j++ {
					src[rng.IntN(d)] = specials[rng.IntN(len(specials))]
				}
			}
			want := make([]float32, d)
			copy(want, src)
			fwht(want)
			for i := range want {
				want[i] *= rot.sc[i]
			}
			got := make([]float32, d)
			k(&got[0], &src[0], &rot.sc[0])
			alias := append([]float32(nil), src...)
			k(&alias[0], &alias[0], &rot.sc[0])
			for i := range want {
				w := math.Float32bits(want[i])
				if g := math.Float32bits(got[i]); g != w && !(want[i] != want[i] && got[i] != got[i]) {
					t.Fatalf("%s trial %d: value %d = %v, Go path %v", name, trial, i, got[i], want[i])
				}
				if g := math.Float32bits(alias[i]); g != w && !(want[i] != want[i] && alias[i] != alias[i]) {
					t.Fatalf("%s trial %d: in place, value %d = %v, Go path %v", name, trial, i, alias[i], want[i])
				}
			}
			if trial%4 == 3 {
				continue
			}
			y, back := make([]float32, d), make([]float32, d)
			rot.apply(y, src)
			rot.applyT(back, y)
			var amax float32
			for _, v := range src {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			for i := range src {
				if math.Abs(float64(back[i]-src[i])) > 1e-5*float64(amax) {
					t.Fatalf("%s trial %d: RᵀR·x value %d = %v, want %v", name, trial, i, back[i], src[i])
				}
			}
		}
	}
}

// TestEncodeRowsVecIsGo: with the rotation kernels on, Encode and EncodeRows of every rotated
// format write the bytes the Go loops write (the kernels off), calibrated and not, at the head
// dimensions the kernels take (64, 128) and one they do not (80).
func TestEncodeRowsVecIsGo(t *testing.T) {
	if len(rotRowKernels()) == 0 {
		t.Skip("no rotation kernel on this CPU or build")
	}
	defer setRotVec(true)
	rng := rand.New(rand.NewPCG(43, 44))
	const n = 9
	for _, f := range Formats() {
		for _, d := range []int{64, 80, 128} {
			for _, calibrate := range []bool{false, true} {
				c, err := NewCodec(f, d, CodecOptions{Seed: 5, Layer: 1, Head: 2, Rotate: true})
				if err != nil {
					continue
				}
				if _, ok := c.(*rotCodec); !ok {
					continue
				}
				rows := make([]float32, n*d)
				for i := range rows {
					rows[i] = float32(rng.NormFloat64())*float32(1+i%d%5) + float32(i%d%3)
				}
				if cal, ok := c.(Calibrator); ok && calibrate {
					cal.Calibrate(rows, n)
				}
				rb := c.RowBytes()
				want, got := make([]byte, n*rb), make([]byte, n*rb)
				setRotVec(false)
				EncodeRows(c, want, rows, n)
				setRotVec(true)
				EncodeRows(c, got, rows, n)
				if !bytes.Equal(got, want) {
					t.Fatalf("%s d=%d calibrated %v: EncodeRows with the rotation kernel differs from the Go loops", f, d, calibrate)
				}
				c.Encode(got[:rb], rows[d:2*d])
				if !bytes.Equal(got[:rb], want[rb:2*rb]) {
					t.Fatalf("%s d=%d calibrated %v: Encode with the rotation kernel differs from the Go loops", f, d, calibrate)
				}
			}
		}
	}
}

// TestEncodeRowsSpeed prints (KVLAB_SPEED_REPORT set) the best thread-CPU time per row of
// EncodeRows over 9 rows of 64 values (a p64 mixed cache's leaving batch) and of one-row Encode,
// for calibrated rotated q8_0 and q4_0, the Go loops of the rotation and of q8_0's rounding against
// their kernels, interleaved
// (each timing 20 calls, the timer's own cost spread over them).
func TestEncodeRowsSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer setRotVec(true)
	defer setQ8EncVec(true)
	const d, n = 64, 9
	rng := rand.New(rand.NewPCG(45, 46))
	rows := make([]float32, 64*d)
	for i := range rows {
		rows[i] = float32(rng.NormFloat64()) * float32(1+i%d%5)
	}
	for _, f := range []Format{Q8_0, Q4_0} {
		c, err := NewCodec(f, d, CodecOptions{Seed: 1, Rotate: true})
		if err != nil {
			t.Fatal(err)
		}
		c.(Calibrator).Calibrate(rows, 64)
		dst := make([]byte, n*c.RowBytes())
		var best [2][2]time.Duration
		for i := range best {
			best[i] = [2]time.Duration{time.Hour, time.Hour}
		}
		const calls = 20
		for r := 0; r < 200; r++ {
			for on := 0; on < 2; on++ {
				setRotVec(on == 1)
				setQ8EncVec(on == 1)
				t0 := cputime.Thread()
				for k := 0; k < calls; k++ {
					EncodeRows(c, dst, rows[k%7*d:], n)
				}
				t1 := cputime.Thread()
				for k := 0; k < calls; k++ {
					c.Encode(dst, rows[k%7*d:])
				}
				t2 := cputime.Thread()
				best[on][0] = min(best[on][0], (t1-t0)/(calls*n))
				best[on][1] = min(best[on][1], (t2-t1)/calls)
			}
		}
		t.Logf("%s d=%d: EncodeRows(%d) per row: Go %v, kernels %v; Encode: Go %v, kernels %v",
			f, d, n, best[0][0], best[1][0], best[0][1], best[1][1])
	}
}
