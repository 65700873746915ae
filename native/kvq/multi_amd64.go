//go:build amd64 && !purego

package kvq

import (
	"strings"

	"github.com/kvlab/kvlab/internal/isa"
	"golang.org/x/sys/cpu"
)

// The AVX-512 kernels (multi_amd64.s) serve CPUs with AVX-512 F, the AVX2 kernels
// (multi_avx2_amd64.s; f16's multi_avx2f_amd64.s) those with AVX2, FMA and F16C; x/sys/cpu checks that the operating
// system saves the registers. Other CPUs run DotMany and AccumulateMany per query.
// KVLAB_NO_AVX512 set (any value, read once at start) selects the AVX2 kernels on an AVX-512
// CPU, VNNI's included, as it does for the weight kernels (native/wkern); the AVX-512 VNNI, VBMI
// and BF16 kernels follow internal/isa's flags, never cpu.X86's own (its switches pretend a
// Skylake-SP or a Cascade Lake). Every AVX-512 CPU,
// AMD Zen 4 (512-bit operations as two 256-bit halves) included, accumulates with the 512-bit
// kernels: 256-bit ones chosen on Zen 4 from in-cache timings made whole decodes slower there.
var (
	hasAVX512 = isa.AVX512F
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C
)

var (
	avx512Kernels = [3]*multiKernels{
		{scores: f16Scores4, acc: multiAccF16AVX512}, // f16Scores4: multi_f16acc_amd64.go
		{scores: multiScoresQ80AVX512, acc: multiAccQ80AVX512},
		{scores: multiScoresQ40AVX512, acc: multiAccQ40AVX512},
	}
	avx2Kernels = [3]*multiKernels{
		f16AVX2, // multi_avx2f_amd64.go
		{scores: multiScoresQ80AVX2, acc: multiAccQ80AVX2},
		{scores: multiScoresQ40AVX2, acc: multiAccQ40AVX2},
	}
)

// multiTQ4 is tq4's kernels: AVX-512 (multi_turbo_amd64.go), else AVX2 (multi_avx2x_amd64.go).
var multiTQ4 = func() *multiKernels {
	switch {
	case hasAVX512:
		return tq4Z
	case hasAVX2:
		return tq4AVX2
	}
	return nil
}()

// accBcastFMA makes the f16, bf16 and fp8 (VBMI) AVX-512 accumulate kernels take each weight
// as the embedded broadcast of its FMAs rather than broadcast into a register (accw_amd64.h,
// gen_avx512.go's fvaRow): on AMD Zen 4 (zen4Stream, cpuid_amd64.go), where f16's and bf16's
// take ~22% and fp8's ~10% less time in cache. The sums are the same bit for bit either way;
// TestAccBcastFMA runs both.
var accBcastFMA = hasAVX512 && zen4Stream

// accFloatBcst is accBcastFMA for the f16 and bf16 AVX-512 accumulate kernels, over contiguous
// rows (multiAccF16AVX512, multiAccBF16AVX512) and in their runs flavours (multiAccF16AVX512PF
// as accFloatRuns calls it, multiAccBF16RunsAVX512): set on Intel too (intelCPU), where their
// embedded-broadcast loop, the one that prefetches the tile three on (the run three on) into L2
// (PREFETCHT1) besides the next tile (the next run) into L1, took less time streamed. Intel Xeon
// (2 vCPUs, KVM, family 6 model 167), attn decode at 131072 cells (one thread, 8 KV heads of
// 128, 4 queries, rows on 2 MiB pages; thread CPU, ns a row of one KV head, min/median of 15–21
// rounds, the loops alternated by round in one process, load 4–5): f16 values
// 16.4–17.9/18.5–21.4 → 15.9–17.6/17.2–18.9, bf16 17.3–17.7/19.1–21.4 → 15.9–16.4/17.0–19.0.
// With the L2 prefetch one tile on f16 took 17.5–20.6/20.9–22.1 (slower), two, four, five or
// eight tiles on within ~0.5 of three. Over a paged cache's runs (kvcache TestPagedBreakdown,
// one thread, 32768 cells, 8 KV heads of 128, 4 queries, thread CPU, 2 alternations, load ~22),
// paged values: f16 6.60–6.84 → 5.48–5.53 ms, bf16 6.81–7.04 → 5.44–5.62 (contiguous 3.9–4.5).
// Not kept: a Prefetch (PREFETCHT1 of a whole run) of the run one, two or three on before each
// run, with the register-broadcast loop: f16 6.59–6.63 → 6.93–7.39, bf16 6.43–6.56 → 7.03–7.49.
// The sums are the same bit for bit either way (TestAccBcastFMA).
var accFloatBcst = accBcastFMA || hasAVX512 && intelCPU

// multiF16, multiQ8_0 and multiQ4_0 are the kernels this CPU runs, nil for none.
var multiF16, multiQ8_0, multiQ4_0 = func() (*multiKernels, *multiKernels, *multiKernels) {
	switch {
	case hasAVX512:
		return avx512Kernels[0], avx512Kernels[1], avx512Kernels[2]
	case hasAVX2:
		return avx2Kernels[0], avx2Kernels[1], avx2Kernels[2]
	}
	return nil, nil, nil
}()

// The kernels' contracts are multiKernels'. Implemented in multi_amd64.s.

//go:noescape
func multiScoresF16AVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

// multiAccF16AVX512 is multiAccF16AVX512PF prefetching, a tile at a time, the next tile into
// L1 and the tile three ahead into L2: the rows that follow in memory.
func multiAccF16AVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	multiAccF16AVX512PF(acc, d, nv, rows, rb, m, w, wstride, 64*rb, 3*64*rb, accFloatBcst)
}

// multiAccF16AVX512PF is the f16 AVX-512 accumulate kernel, its prefetches pf1 bytes (into L1)
// and pf3 bytes (into L2) past each 64-row tile's first row (multi_amd64.s): accF16Runs aims
// them at a paged store's next runs. bcst picks the embedded-broadcast loop (accFloatBcst): the
// same sums bit for bit.
//
//go:noescape
func multiAccF16AVX512PF(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf1, pf3 int, bcst bool)

//go:noescape
func multiScoresQ80AVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccQ80AVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresQ80AVX2(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccQ80AVX2(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresQ40AVX2(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccQ40AVX2(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresQ40AVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccQ40AVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

// reduceOrder is the lane order that gathers the scores kernels' eight sums, [a0 b0 a0 b0]
// per 128-bit lane h, into [a0 a1 a2 a3 b0 b1 b2 b3].
var reduceOrder = [16]int32{0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}

// KernelISA names the instruction sets the decode-attention kernels use on this CPU and build,
// as KVLAB_NO_AVX512, KVLAB_NO_AVX512VNNI, KVLAB_NO_AVX512VBMI, KVLAB_NO_AVX512BF16,
// KVLAB_NO_AVXVNNI and KVLAB_NO_AMX leave them: "AVX-512 (VNNI, VBMI, BITALG, GFNI, BF16, AMX)"
// (each extension named where a kernel that uses it runs: BITALG q5's kernels, GFNI q5's
// scores, BF16 fp8's on AMD, AMX fp8's on Intel CPUs with AMX-BF16, rows of 128 values),
// "AVX-512 (VNNI)", "AVX-512 + AVX2 integer" (AVX-512 without
// VNNI: the integer kernels are the AVX2 ones, avx2Int), "AVX2 + AVX-VNNI", "AVX2", or "Go"
// where the CPU lacks AVX2, FMA or F16C. On an AMD Zen 4 the AVX-512 names end with "; Zen 4
// flavours" inside the brackets where its own kernel flavours run (zen4Stream; KVLAB_NO_ZEN4 turns them off).
func KernelISA() string {
	switch {
	case hasAVX512 && avx2Int:
		return "AVX-512 + AVX2 integer"
	case hasAVX512:
		var ext []string
		if hasVNNI {
			ext = append(ext, "VNNI")
		}
		if hasVNNI && hasVBMI {
			ext = append(ext, "VBMI")
		}
		if hasVNNI && hasBITALG {
			ext = append(ext, "BITALG")
		}
		if q5ScoresGFNI || fp8AMXActive() { // fp8's AMX kernels decode by VGF2P8AFFINEQB
			ext = append(ext, "GFNI")
		}
		if fp8BF16Active() { // not on Intel, whose fp8 kernels take float32 (fp8F32)
			ext = append(ext, "BF16")
		}
		if fp8AMXActive() { // Intel with AMX-BF16: fp8's scores and values of rows of 128 values
			ext = append(ext, "AMX")
		}
		s := strings.Join(ext, ", ")
		if zen4Stream {
			if s != "" {
				s += "; "
			}
			s += "Zen 4 flavours"
		}
		if s == "" {
			return "AVX-512"
		}
		return "AVX-512 (" + s + ")"
	case hasAVX2 && hasAVXVNNI:
		return "AVX2 + AVX-VNNI"
	case hasAVX2:
		return "AVX2"
	}
	return "Go"
}
