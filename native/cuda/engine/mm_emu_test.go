//go:build cudaemu

package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
)

// randomMatrix draws a rows × cols matrix of type t: normal values encoded by kvq's ggml
// block encoders (f32 as is).
func randomMatrix(t *testing.T, r *rand.Rand, typ gguf.Type, rows, cols int) *model.Matrix {
	t.Helper()
	vals := make([]float32, cols)
	var data []byte
	for i := 0; i < rows; i++ {
		for j := range vals {
			vals[j] = float32(r.NormFloat64())
		}
		if typ == gguf.F32 {
			for _, v := range vals {
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
			}
			continue
		}
		c, err := kvq.NewCodec(kvqOf[typ], cols, kvq.CodecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		row := make([]byte, c.RowBytes())
		c.Encode(row, vals)
		data = append(data, row...)
	}
	m, err := model.NewMatrix("w", typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEmuMatVec checks the matrix–vector kernels of every device weight type against
// model.Matrix.MatVecReference (float32, sequential): odd row counts (a partial block of
// warps), f32/f16 rows that are not a multiple of 8 (the element-wise path), rows longer than
// 32 chunks, one token (t1) and 11 tokens (t8 with a partial column), with and without a bias
// and accumulation. The bound is 1e-5 of Σ|w·x| per output: only the summation order differs.
// It also checks the embedding lookup, which must equal DequantRow exactly.
func TestEmuMatVec(t *testing.T) {
	e := emuEngine(t)
	ctx := e.Context()
	r := rand.New(rand.NewPCG(1, 2))
	up := func(b []byte) *cuda.Buffer {
		buf, err := ctx.Alloc(int64(max(len(b), 4)))
		if err != nil {
			t.Fatal(err)
		}
		if err := buf.Write(b); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { buf.Free() })
		return buf
	}
	type shape struct{ rows, cols int }
	for _, typ := range WeightTypes {
		shapes := []shape{{37, 256}, {5, 1056}}
		if typ == gguf.F32 || typ == gguf.F16 {
			shapes = append(shapes, shape{9, 100})
		}
		for _, sh := range shapes {
			for _, n := range []int{1, 11} {
				for _, extras := range []bool{false, true} {
					name := fmt.Sprintf("%s/%dx%d/n%d/bias+acc=%v", typ, sh.rows, sh.cols, n, extras)
					t.Run(name, func(t *testing.T) {
						m := randomMatrix(t, r, typ, sh.rows, sh.cols)
						x := make([]float32, n*sh.cols)
						for i := range x {
							x[i] = float32(r.NormFloat64())
						}
						y0 := make([]float32, n*sh.rows)
						var bias []float32
						var bbuf *cuda.Buffer
						if extras {
							bias = make([]float32, sh.rows)
							for i := range bias {
								bias[i] = float32(r.NormFloat64())
							}
							for i := range y0 {
								y0[i] = float32(r.NormFloat64())
							}
							bbuf = up(cuda.Bytes(bias))
						}
						w := &weight{buf: up(m.Data), typ: typ, rows: sh.rows, cols: sh.cols}
						yb := up(cuda.Bytes(y0))
						if err := e.matVec(yb, w, up(cuda.Bytes(x)), bbuf, n, extras); err != nil {
							t.Fatal(err)
						}
						got := make([]float32, n*sh.rows)
						if err := yb.Read(cuda.Bytes(got)); err != nil {
							t.Fatal(err)
						}
						ref := make([]float32, sh.rows)
						row := make([]float32, sh.cols)
						for tk := 0; tk < n; tk++ {
							if err := m.MatVecReference(ref, x[tk*sh.cols:(tk+1)*sh.cols]); err != nil {
								t.Fatal(err)
							}
							for i := 0; i < sh.rows; i++ {
								m.DequantRow(row, i)
								var mag float64
								for j, v := range row {
									mag += math.Abs(float64(v) * float64(x[tk*sh.cols+j]))
								}
								want := float64(ref[i])
								if extras {
									want += float64(bias[i]) + float64(y0[tk*sh.rows+i])
									mag += math.Abs(float64(bias[i])) + math.Abs(float64(y0[tk*sh.rows+i]))
								}
								if g := float64(got[tk*sh.rows+i]); math.Abs(g-want) > 1e-5*mag {
									t.Fatalf("token %d row %d: %g, want %g (Σ|w·x| %g)", tk, i, g, want, mag)
								}
							}
						}
					})
				}
			}
		}
		t.Run(typ.String()+"/embed", func(t *testing.T) {
			m := randomMatrix(t, r, typ, 50, 160)
			toks := []int32{3, 49, 0, 3, 17}
			xb, err := ctx.Alloc(int64(len(toks) * 160 * 4))
			if err != nil {
				t.Fatal(err)
			}
			defer xb.Free()
			k, err := e.kernel(EmbedKernel(typ))
			if err != nil {
				t.Fatal(err)
			}
			if err := k.launch(cuda.D1(len(toks)), cuda.D1(256), 0, nil, cuda.Ptr(xb), cuda.Ptr(up(m.Data)), cuda.Ptr(up(cuda.Bytes(toks))), cuda.Int(160)); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(toks)*160)
			if err := xb.Read(cuda.Bytes(got)); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, 160)
			for i, tok := range toks {
				m.DequantRow(want, int(tok))
				for j, v := range want {
					if got[i*160+j] != v {
						t.Fatalf("token %d value %d: %g, want %g", tok, j, got[i*160+j], v)
					}
				}
			}
		})
	}
}
