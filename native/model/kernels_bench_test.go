package model

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// BenchmarkMatVec measures y = W·x for a 512×512 matrix of each weight type on one thread.
func BenchmarkMatVec(b *testing.B) {
	for _, typ := range weightTypes {
		b.Run(typ.String(), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			const rows, cols = 512, 512
			m, err := NewMatrix("w", typ, rows, cols, randomWeights(r, typ, rows, cols))
			if err != nil {
				b.Fatal(err)
			}
			x, y := make([]float32, cols), make([]float32, rows)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			b.SetBytes(int64(len(m.Data)))
			for b.Loop() {
				m.MatVec(y, x, nil)
			}
			b.ReportMetric(float64(rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// BenchmarkMatVecDecode measures y = W·x on one thread for a 5632×2048 matrix of the types a
// decode reads: "cache" multiplies one matrix over and over (the weights stay in the last-level
// cache where they fit), "dram" cycles through copies of it totalling at least 256 MiB, so the
// weights stream from memory as in a decode step. GMAC/s is multiply-adds per nanosecond.
func BenchmarkMatVecDecode(b *testing.B) {
	const rows, cols = 5632, 2048
	for _, typ := range []gguf.Type{gguf.F16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K} {
		r := rand.New(rand.NewPCG(1, 2))
		w := randomWeights(r, typ, rows, cols)
		x, y := make([]float32, cols), make([]float32, rows)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for _, mode := range []string{"cache", "dram"} {
			copies := 1
			if mode == "dram" {
				copies = max(1, (256<<20+len(w)-1)/len(w))
			}
			ms := make([]*Matrix, copies)
			for i := range ms {
				d := w
				if i > 0 {
					d = slices.Clone(w)
				}
				m, err := NewMatrix("w", typ, rows, cols, d)
				if err != nil {
					b.Fatal(err)
				}
				ms[i] = m
			}
			b.Run(typ.String()+"/"+mode, func(b *testing.B) {
				i := 0
				for b.Loop() {
					ms[i].MatVec(y, x, nil)
					i = (i + 1) % len(ms)
				}
				b.ReportMetric(float64(rows*cols)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GMAC/s")
			})
		}
	}
}

// BenchmarkMatVecMapped runs the one-token products of every blk.* matrix of the GGUF file named
// by KVLAB_BENCH_GGUF (skipped without it) on 1 and 2 threads, the weights read from the file's
// mapping ("mmap", as a decode reads them) or from a heap copy ("heap": anonymous memory, huge
// pages where the kernel gives them), to compare the two. GB/s is weight bytes per nanosecond.
func BenchmarkMatVecMapped(b *testing.B) {
	path := os.Getenv("KVLAB_BENCH_GGUF")
	if path == "" {
		b.Skip("KVLAB_BENCH_GGUF names no file")
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var mapped, heap []*Matrix
	cols := 0
	for _, ti := range f.Tensors() {
		if !strings.HasPrefix(ti.Name, "blk.") || len(ti.Dims) != 2 {
			continue
		}
		d, err := f.TensorData(ti.Name)
		if err != nil {
			b.Fatal(err)
		}
		rows, c := int(ti.Dims[1]), int(ti.Dims[0])
		m, err := NewMatrix(ti.Name, ti.Type, rows, c, d)
		if err != nil {
			b.Fatal(err)
		}
		h, _ := NewMatrix(ti.Name, ti.Type, rows, c, slices.Clone(d))
		mapped, heap = append(mapped, m), append(heap, h)
		cols = max(cols, c, rows)
	}
	x, y := make([]float32, cols), make([]float32, cols)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		defer p.Close()
		for _, set := range []struct {
			name string
			ms   []*Matrix
		}{{"mmap", mapped}, {"heap", heap}} {
			b.Run(fmt.Sprintf("%s/t%d", set.name, threads), func(b *testing.B) {
				var bytes int
				for b.Loop() {
					for _, m := range set.ms {
						m.MatVec(y, x, p)
						bytes += len(m.Data)
					}
				}
				b.ReportMetric(float64(bytes)/float64(b.Elapsed().Nanoseconds()), "GB/s")
			})
		}
	}
}
