package model

import (
	"fmt"
	"github.com/kvlab/kvlab/internal/cputime"
	"strings"
	"testing"
)

// benchModels are the fixtures the speed benchmarks run on.
var benchModels = []string{"stories260K.gguf", "kvlab-tiny-64.gguf"}

// benchContext is the context the decode benchmark decodes at, and the prefill length.
const benchContext = 256

func benchTokens(vocab, n int) []int32 {
	ids := make([]int32, n)
	ids[0] = 1
	for i := 1; i < n; i++ {
		ids[i] = int32(3 + (i*131)%(vocab-3))
	}
	return ids
}

// BenchmarkDecode measures single-token decode at benchContext tokens of context (and at
// position 0, where attention is negligible and the time is the matrix products and the
// rest of the block): each iteration decodes one position and truncates it away again. tok/s
// is iterations per second of wall time, cpu-µs/tok the process CPU time per iteration (the
// number to trust on a busy machine).
func BenchmarkDecode(b *testing.B) {
	for _, name := range benchModels {
		for _, threads := range []int{1, 2} {
			for _, kv := range []string{"f16", "q8_0", "q4_0", "q8_0/q4_0", "q2k", "tq4"} {
				for _, ctx := range []int{benchContext, 0} {
					b.Run(fmt.Sprintf("%s/t%d/%s/ctx%d", name, threads, strings.ReplaceAll(kv, "/", "-"), ctx), func(b *testing.B) {
						m, _ := load(b, name, threads)
						c := newCache(b, m, kv, benchContext+1)
						if ctx > 0 {
							if err := m.Forward(benchTokens(m.Hparams.Vocab, ctx), c, nil); err != nil {
								b.Fatal(err)
							}
						}
						logits := make([]float32, m.Hparams.Vocab)
						next := []int32{5}
						b.ReportAllocs()
						b.ResetTimer()
						cpu0 := cputime.Process()
						for b.Loop() {
							if err := m.Forward(next, c, logits); err != nil {
								b.Fatal(err)
							}
							if err := c.Truncate(ctx); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
						b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/tok")
					})
				}
			}
		}
	}
}

// BenchmarkPrefill measures a prefill of benchContext tokens into an empty cache. tok/s is
// prompt tokens per second.
func BenchmarkPrefill(b *testing.B) {
	for _, name := range benchModels {
		for _, threads := range []int{1, 2} {
			for _, kv := range []string{"f16", "q8_0", "q4_0", "q8_0/q4_0", "q2k", "tq4"} {
				b.Run(fmt.Sprintf("%s/t%d/%s", name, threads, strings.ReplaceAll(kv, "/", "-")), func(b *testing.B) {
					m, _ := load(b, name, threads)
					c := newCache(b, m, kv, benchContext)
					ids := benchTokens(m.Hparams.Vocab, benchContext)
					logits := make([]float32, m.Hparams.Vocab)
					b.ReportAllocs()
					b.ResetTimer()
					cpu0 := cputime.Process()
					for b.Loop() {
						if c.Truncate(0) != nil || c.Len() != 0 {
							c = newCache(b, m, kv, benchContext) // q2k cannot drop a finished group
						}
						if err := m.Forward(ids, c, logits); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.N*benchContext)/b.Elapsed().Seconds(), "tok/s")
					b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N*benchContext), "cpu-µs/tok")
				})
			}
		}
	}
}
