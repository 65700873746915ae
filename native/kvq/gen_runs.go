//go:build ignore

// gen_runs writes multi_runs_amd64.s: the "runs" flavours of kernels for a paged cache's pages
// (DotManyMultiRuns, AccumulateManyMultiRuns), each a copy of a kernel gen_intacc.go,
// gen_f16acc.go, gen_tq4vnni.go, gen_turboacc.go, gen_avx2f.go, gen_avx2int.go or
// gen_avx2intacc.go wrote whose prefetches go pf bytes on, pf an argument after the kernel's own,
// where the kernel's go a fixed distance past the rows it reads. A paged cache's run of one
// page is one tile of at most 64 rows; the drivers (multi_runs_amd64.go: accIntRuns,
// scoresRuns) pass the offset of a later run, so the prefetches reach the pages to come rather
// than the memory that follows a page's rows (the same head's V rows, or another head's).
// Everything else is the kernel's, so the results are its, bit for bit; each replacement must
// match as many times as it says, so a change to a kernel that moves its prefetches stops the
// generator rather than leaving a flavour behind. Run with `go generate ./native/kvq` (after
// gen_intacc.go, gen_f16acc.go, gen_tq4vnni.go and gen_turboacc.go: runs_gen_amd64.go's
// go:generate line comes after theirs in file order). A kernel that uses its file's macros
// (defs) gets them copied ahead of it, less those nothing in the output names (pruneDefines).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// A runs flavour: the kernel's name in file src, its runs flavour's name, the frame of the
// kernel's TEXT line and the runs flavour's (pf one more argument), and the replacements
// (each must match exactly n times; n < 0: any number) after the name and frame's.
type flavour struct {
	src, name, runs  string
	frame, runsFrame string
	doc              string
	repl             []repl
	defs             bool // the kernel uses src's macros: they are copied (once a file) before it
	// out is the file the flavour goes to (multi_runs_amd64.s where empty): a src whose
	// macros share names with another src's (multi_vnni_amd64.s's and multi_avx512x_amd64.s's
	// with multi_tq4vnni_amd64.s's or multi_bf16_amd64.s's) has its flavours in a file of
	// their own.
	out string
	pre string // text that goes before the flavour (after src's macros)
	// gen, where not empty, is the arguments of a `go run` whose output is the kernel's text
	// in place of src's: a generator's form of the kernel that src does not hold (gen_avx2f.go's
	// fp8 accumulate kernel without its next-tile path, which a run of one tile never takes).
	gen []string
}

type repl struct {
	old, new string
	n        int
}

var flavours = []flavour{
	{
		src: "multi_intacc_amd64.s", name: "multiAccQ80Z4INT", runs: "multiAccQ80Z4RunsINT",
		frame: "$6848-64", runsFrame: "$6848-72",
		doc: "prefetching pf bytes past each tile's first row (the run after next), not the tile after next.",
		repl: []repl{
			{"wstride int)\n", "wstride int, pf int)\n", 1},
			{"\tMOVQ rb+32(FP), R12\n\tSHLQ $7, R12\n\tADDQ DI, R12\n\tMOVQ R12, 6512(SP)         // the tile after next",
				"\tMOVQ pf+64(FP), R12\n\tADDQ DI, R12\n\tMOVQ R12, 6512(SP)         // pf bytes on (the run after next)", 1},
			{"aQ80Z4_", "aQ80Z4R_", -1},
		},
	},
	{
		src: "multi_intacc_amd64.s", name: "multiAccQ40V8Z4INT", runs: "multiAccQ40V8Z4RunsINT",
		frame: "$6848-64", runsFrame: "$6848-72",
		doc: "prefetching pf bytes past each tile's first row (the run after next), not 32 KiB past the tile after next.",
		repl: []repl{
			{"wstride int)\n", "wstride int, pf int)\n", 1},
			{"\tMOVQ rb+32(FP), R12\n\tSHLQ $7, R12\n\tADDQ DI, R12\n\tMOVQ R12, 6512(SP)         // the tile after next, prefetched 2·18 bytes a row-pair step, 32768 bytes further on",
				"\tMOVQ pf+64(FP), R12\n\tADDQ DI, R12\n\tMOVQ R12, 6512(SP)         // pf bytes on (the run after next), prefetched 2·18 bytes a row-pair step", 1},
			{"PREFETCHT1 32768(R15)", "PREFETCHT1 (R15)", 6},
			{"aQ40V8Z4_", "aQ40V8Z4R_", -1},
		},
	},
	v8Z4AccRuns("multiAccQ41V8Z4INT", "multiAccQ41V8Z4RunsINT", "aQ41V8Z4_", 20),
	v8Z4AccRuns("multiAccIQ4NLV8Z4INT", "multiAccIQ4NLV8Z4RunsINT", "aIQ4NLV8Z4_", 18),
	intAccRuns("multiAccQ50VINT", "multiAccQ50VRunsINT", "aQ50V_", "the tile after next, prefetched 2·22 bytes a row-pair step"),
	intelQ5AccRuns("multiAccQ50VIINT", "multiAccQ50VIRunsINT", "aQ50VI_", "the tile after next, prefetched 2·22 bytes a row-pair step", 0, 0),
	intelQ5AccRuns("multiAccQ51V8XINT", "multiAccQ51V8XRunsINT", "aQ51V8X_", "the tile after next, prefetched 2·24 bytes a row-pair step", 4, 12),
	intAccRuns("multiAccQ51V8Z4INT", "multiAccQ51V8Z4RunsINT", "aQ51V8Z4_", "the tile after next, prefetched 2·24 bytes a row-pair step"),
	turboAccRuns("multiAccT4FBINT", "multiAccT4FBRunsINT", "aT4FB_"),
	turboAccRuns("multiAccT4BINT", "multiAccT4BRunsINT", "aT4B_"),
	turboAccRuns("multiAccT3BINT", "multiAccT3BRunsINT", "aT3B_"),
	turboAccRuns("multiAccT2BINT", "multiAccT2BRunsINT", "aT2B_"),
	turboAccRuns("multiAccT2BMINT", "multiAccT2BMRunsINT", "aT2BM_"),
	{
		src: "multi_bf16_amd64.s", name: "multiAccBF16AVX512", runs: "multiAccBF16RunsAVX512",
		frame: "$16-64", runsFrame: "$16-80", defs: true,
		doc: "prefetching pf1 bytes past each tile's first row into L1 and pf3 bytes past it into L2 (the next run and the third on), as multiAccF16AVX512PF does f16's, not the next tile and the tile three ahead.",
		repl: []repl{
			{"wstride int)\n", "wstride int, pf1, pf3 int)\n", 1},
			{"\tMOVQ rb+32(FP), R12\n\tSHLQ $6, R12\n\tLEAQ (DI)(R12*1), R15      // the next tile, prefetched 64 bytes a row step: the passes\n\t                           // over this tile cover it evenly\n\tLEAQ (R12)(R12*2), R14\n\tADDQ DI, R14               // the tile three ahead, into L2 the same way (the Zen 4 loop)\n",
				"\tMOVQ pf1+64(FP), R15\n\tADDQ DI, R15               // the next run, prefetched 64 bytes a row step\n\tMOVQ pf3+72(FP), R14\n\tADDQ DI, R14               // the run three ahead, into L2 the same way (the Zen 4 loop)\n", 1},
		},
	},
	{
		src: "multi_bf16_amd64.s", name: "multiScoresBF16AVX512", runs: "multiScoresBF16RunsAVX512",
		frame: "$0-64", runsFrame: "$0-72", defs: true,
		doc: "prefetching into L2 (the Zen 4 loop, which it takes on every CPU) pf bytes past each row (the same row of the next run) in place of PFDISTZ4L2, and into L1 PFDISTZ4L1 on in this run and the next taken as one.",
		repl: []repl{
			{"ostride int)\n", "ostride int, pf int)\n", 1},
			{"\tMOVQ out+48(FP), R9\n\tCONSTS\n", "\tMOVQ out+48(FP), R9\n\tCONSTS\n\tMOVQ pf+64(FP), R14         // the L2 prefetches' offset (CONSTS's R14 is not used here)\n", 1},
			{"PREFETCHT1 PFDISTZ4L2(BX)", "PREFETCHT1 (BX)(R14*1)", 1},
			{"PREFETCHT1 PFDISTZ4L2(R15)", "PREFETCHT1 (R15)(R14*1)", 1},
			// The L1 prefetches PFDISTZ4L1 on in this run and the next taken as one (AX, set at
			// each pair: PFDISTZ4L1 while that is in the run, else into the next run), as
			// multiScoresFP8BF16HRunsAVX512's.
			{"\tCMPB ·zen4Stream(SB), $0\n\tJNE  multiScoresBF16AVX512_blkz\n",
				"\tMOVQ R10, AX\n\tIMULQ R8, AX               // the bytes left in the run\n\tCMPQ AX, $PFDISTZ4L1\n\tJLE  multiScoresBF16AVX512_pfnx\n\tMOVQ $PFDISTZ4L1, AX\n\tJMP  multiScoresBF16AVX512_pfin\nmultiScoresBF16AVX512_pfnx:\n\tMOVQ m+40(FP), AX\n\tIMULQ R8, AX\n\tNEGQ AX\n\tADDQ R14, AX\n\tADDQ $PFDISTZ4L1, AX       // PFDISTZ4L1 on, into the next run\nmultiScoresBF16AVX512_pfin:\n\tJMP  multiScoresBF16AVX512_blkz // the Zen 4 loop on every CPU that takes the flavour (bf16RunsZ4)\n", 1},
			{"PREFETCHT0 PFDISTZ4L1(BX)", "PREFETCHT0 (BX)(AX*1)", 1},
			{"PREFETCHT0 PFDISTZ4L1(R15)", "PREFETCHT0 (R15)(AX*1)", 1},
		},
	},
	q5ScoresRuns("multiScoresQ50Z4GFNI", "multiScoresQ50Z4RunsGFNI", "z4Q50_", "\tPF22Z4\n",
		"\tPREFETCHT0 (AX)\n\tPREFETCHT0 64(AX)\n\tPREFETCHT0 128(AX)\n\tPREFETCHT0 192(AX)\n\tPREFETCHT0 256(AX)\n\tPREFETCHT0 320(AX)\n\tADDQ $352, AX\n"),
	q5ScoresRuns("multiScoresQ51Z4GFNI", "multiScoresQ51Z4RunsGFNI", "z4Q51_", "\tPF20Z4\n", "\tPF20\n"),
	intelQ5ScoresRuns("multiScoresQ50XGFNI", "multiScoresQ50XRunsGFNI", "xQ50_", "\tPF22X\n", 352, 176),
	intelQ5ScoresRuns("multiScoresQ51XGFNI", "multiScoresQ51XRunsGFNI", "xQ51_", "\tPF20X\n", 384, 192),
	{
		src: "multi_avx512x_amd64.s", name: "multiAccFP8BF16", runs: "multiAccFP8BF16RunsAVX512",
		frame: "$536-64", runsFrame: "$544-80", defs: true, out: "multi_runs_avx512x_amd64.s",
		doc: "prefetching into L1 pf1 bytes past each row pair (the next run) and into L2 pf2 bytes past it (the run after next), not the next tile and the tile after.",
		repl: []repl{
			{"wstride int)\n", "wstride int, pf1, pf2 int)\n", 1},
			{"\tMOVQ rb+32(FP), R12\n\tMOVQ R12, R15\n\tSHLQ $6, R12\n\tMOVQ R12, pf-16(SP)        // bytes to the next tile, which the pair loop prefetches\n\tADDQ R15, R12\n\tMOVQ R12, pfb-24(SP)       // the same from a pair's second row\n",
				"\tMOVQ pf1+64(FP), R12\n\tMOVQ R12, pf-16(SP)        // bytes to the next run, which the pair loop prefetches\n\tADDQ rb+32(FP), R12\n\tMOVQ R12, pfb-24(SP)       // the same from a pair's second row\n\tMOVQ pf2+72(FP), R12\n\tMOVQ R12, pf2-544(SP)      // bytes to the run after next (L2)\n", 1},
			{"\tMOVQ pf-16(SP), AX\n\tADDQ AX, AX\n\tADDQ R12, AX               // the same lines two tiles on, into L2\n",
				"\tMOVQ pf2-544(SP), AX\n\tADDQ R12, AX               // the same lines of the run after next, into L2\n", 1},
			{"fba_", "fbaR_", -1},
		},
	},
	{
		src: "multi_avx512x_amd64.s", name: "multiAccFP8VBMI", runs: "multiAccFP8VBMIRunsAVX512",
		frame: "$1040-64", runsFrame: "$1048-80", defs: true, out: "multi_runs_avx512x_amd64.s",
		doc: "prefetching into L1 pf1 bytes past each row (the next run) and into L2 pf2 bytes past it (the run after next), not the next tile and the tile after.",
		repl: []repl{
			{"wstride int)\n", "wstride int, pf1, pf2 int)\n", 1},
			{"\tMOVQ rb+32(FP), R12\n\tSHLQ $6, R12\n\tMOVQ R12, pf-16(SP)        // bytes to the next tile, which the row loop prefetches\n",
				"\tMOVQ pf1+64(FP), R12\n\tMOVQ R12, pf-16(SP)        // bytes to the next run, which the row loop prefetches\n\tMOVQ pf2+72(FP), R12\n\tMOVQ R12, pf2-1048(SP)     // bytes to the run after next (L2)\n", 1},
			{"\tMOVQ pf-16(SP), AX\n\tADDQ AX, AX\n", "\tMOVQ pf2-1048(SP), AX\n", 1},
			{"fva_", "fvaR_", -1},
		},
	},
	{
		src: "multi_avx512x_amd64.s", name: "multiScoresFP8F32", runs: "multiScoresFP8F32RunsAVX512",
		frame: "$0-64", runsFrame: "$0-80", defs: true, out: "multi_runs_avx512x_amd64.s",
		doc: "prefetching, in its loop of four rows, into L1 PFDISTZ bytes on in the rows of this run and the next (pf bytes past each row: the same row of the next run) taken as one, and pf2 bytes past each row (the run after next) into L2 in place of PFDISTZ2 (past a run's end that would be another head's rows).",
		repl: []repl{
			{"ostride, so int)\n", "ostride, so int, pf, pf2 int)\n", 1},
			{"\tMOVQ R11, R12\nf32s_qgrp:\n", "\tMOVQ R11, R12\n\tMOVQ R10, AX\n\tIMULQ R8, AX               // the bytes left in the run\n\tCMPQ AX, $PFDISTZ\n\tJGT  f32s_pfin\n\tMOVQ m+32(FP), AX\n\tIMULQ R8, AX\n\tNEGQ AX\n\tADDQ pf+64(FP), AX\n\tADDQ $PFDISTZ, AX          // PFDISTZ bytes on, into the next run\n\tJMP  f32s_pfset\nf32s_pfin:\n\tMOVQ $PFDISTZ, AX\nf32s_pfset:\n\tLEAQ (AX)(R8*2), DX        // the same from the quad's third row\nf32s_qgrp:\n", 1},
			{"\tPREFETCHT0 PFDISTZ(BX)\n\tPREFETCHT0 PFDISTZ(R15)\n\tPREFETCHT0 PFDISTZ(BX)(R8*2)\n\tPREFETCHT0 PFDISTZ(R15)(R8*2)\n\tPREFETCHT1 PFDISTZ2(BX)\n\tPREFETCHT1 PFDISTZ2(R15)\n\tPREFETCHT1 PFDISTZ2(BX)(R8*2)\n\tPREFETCHT1 PFDISTZ2(R15)(R8*2)\n",
				"\tPREFETCHT0 (BX)(AX*1)\n\tPREFETCHT0 (R15)(AX*1)\n\tPREFETCHT0 (BX)(DX*1)\n\tPREFETCHT0 (R15)(DX*1)\n\tMOVQ pf2+72(FP), R13\n\tPREFETCHT1 (BX)(R13*1)\n\tPREFETCHT1 (R15)(R13*1)\n\tLEAQ (R13)(R8*2), R13\n\tPREFETCHT1 (BX)(R13*1)\n\tPREFETCHT1 (R15)(R13*1)\n", 1},
			{"f32s_", "f32sR_", -1},
		},
	},
	fp8HScoresRuns("multiScoresFP8BF16H", "multiScoresFP8BF16HRunsAVX512", "fbq_", "fbh_"),
	fp8HScoresRuns("multiScoresFP8BF16HZ4", "multiScoresFP8BF16HZ4RunsAVX512", "fzq_", "fzh_"),
	hdrScoresRuns("multiScoresQ41HdrZ4VNNI", "multiScoresQ41HdrZ4RunsVNNI", "$0-80", "$0-88"),
	hdrScoresRuns("multiScoresIQ4NLHdrZ4VBMI", "multiScoresIQ4NLHdrZ4RunsVBMI", "$128-80", "$128-88"),
	t23ScoresRuns("multiScoresT3PUVNNI", "multiScoresT3PURunsVNNI", "T3PU_"),
	t23ScoresRuns("multiScoresT2PUVNNI", "multiScoresT2PURunsVNNI", "T2PU_"),
	t23ScoresRuns("multiScoresT2PUSVNNI", "multiScoresT2PUSRunsVNNI", "T2PUS_"),
	// Intel's (runsIntel) one-chunk tq4 and turbo4 kernels and packed turbo3 and turbo2 ones,
	// whose loops prefetch as the packed uniform-scale ones do (intelTQ4Runs).
	t23ScoresRuns("multiScoresTQ4BVNNI", "multiScoresTQ4BRunsVNNI", "TQ4B_"),
	t23ScoresRuns("multiScoresT4BVNNI", "multiScoresT4BRunsVNNI", "T4B_"),
	t23ScoresRuns("multiScoresT3PVNNI", "multiScoresT3PRunsVNNI", "T3P_"),
	t23ScoresRuns("multiScoresT2PVNNI", "multiScoresT2PRunsVNNI", "T2P_"),
	{
		src: "multi_avx2f_amd64.s", name: "multiAccBF16AVX2T", runs: "multiAccBF16AVX2TPF",
		frame: "$16-64", runsFrame: "$16-80",
		doc: "over at most one tile, prefetching the rows pf1 and pf2 bytes on, as gen_avx2f.go's accRuns makes multiAccF16AVX2TPF of f16's.",
		repl: []repl{
			{"wstride int)\n", "wstride int, pf1, pf2 int)\n", 1},
			{"\tMOVQ rb+32(FP), R14\n\tSHLQ $6, R14\n\tMOVQ R14, AX\n\tADDQ DI, R14\n",
				"\tMOVQ pf1+64(FP), R14\n\tMOVQ pf2+72(FP), AX\n\tSUBQ R14, AX\n\tADDQ DI, R14\n", 1},
			{"fbf16a_", "fbf16p_", -1},
		},
	},
	pairScoresRuns("multiScoresTQ4B2VNNI", "multiScoresTQ4B2RunsVNNI", "TQ4B2_"),
	pairScoresRuns("multiScoresT4B2VNNI", "multiScoresT4B2RunsVNNI", "T4B2_"),
	pairScoresRuns("multiScoresTQ4B2UVNNI", "multiScoresTQ4B2URunsVNNI", "TQ4B2U_"),
	avx2fScoresRuns("multiScoresF16AVX2T", "multiScoresF16AVX2TRuns", "ff16s_", "$32-64", 1),
	avx2fScoresRuns("multiScoresBF16AVX2T", "multiScoresBF16AVX2TRuns", "fbf16s_", "$32-64", 1),
	// fp8's from multiScoresFP8AVX2TW (each group widened a group ahead of its FMAs; three
	// widening blocks, each with the step's PFDISTF prefetches).
	avx2fScoresRuns("multiScoresFP8AVX2TW", "multiScoresFP8AVX2TRuns", "ffp8w_", "$480-64", 3),
	{
		src: "multi_avx2f_amd64.s", name: "multiAccFP8AVX2T", runs: "multiAccFP8AVX2TPF",
		frame: "$9232-64", runsFrame: "$9232-80",
		doc: "over at most one tile (without its next-tile path: gen_avx2f.go -onetile), prefetching the rows pf1 (into L1) and pf2 bytes on (into L2), as multiAccBF16AVX2TPF is multiAccBF16AVX2T's.",
		gen: []string{"gen_avx2f.go", "-onetile"},
		repl: []repl{
			{"wstride int)\n", "wstride int, pf1, pf2 int)\n", 1},
			{"\tMOVQ rb+32(FP), R14\n\tSHLQ $6, R14\n\tADDQ DI, R14               // the next tile, prefetched 32 bytes a row step\n",
				"\tMOVQ pf1+64(FP), R14\n\tADDQ DI, R14               // the next run, prefetched 32 bytes a row step\n", 1},
			{"\tMOVQ rb+32(FP), R8\n\tSHLQ $6, R8                // a tile's bytes: R14 + R8 the tile after next\n",
				"\tMOVQ pf2+72(FP), R8\n\tSUBQ pf1+64(FP), R8        // R14 + R8 the run after next\n", 1},
			{"ffp8a_", "ffp8aR_", -1},
		},
	},
	{
		src: "multi_avx2intacc_amd64.s", name: "multiAccQ80AVX2INT", runs: "multiAccQ80AVX2RunsINT",
		frame: "$3264-64", runsFrame: "$3264-80",
		doc: "over at most one tile, prefetching into L1 the rows pf bytes on (the next run) in place of the next tile, and into L2 those pf2 bytes on (the run after next).",
		repl: []repl{
			{"wstride int)\n", "wstride int, pf, pf2 int)\n", 1},
			{"\tMOVQ rb+32(FP), R12\n\tSHLQ $6, R12\n\tADDQ DI, R12\n\tMOVQ R12, 3248(SP)         // the next tile,",
				"\tMOVQ pf+64(FP), R12\n\tADDQ DI, R12\n\tMOVQ R12, 3248(SP)         // the next run,", 1},
			{"\tMOVQ 3248(SP), R15\n", "\tMOVQ 3248(SP), R15\n\tMOVQ pf2+72(FP), AX\n\tSUBQ pf+64(FP), AX\n", 2},
			{"\tPREFETCHT0 0(R15)\n", "\tPREFETCHT0 0(R15)\n\tPREFETCHT1 0(R15)(AX*1)\n", -1},
			{"\tPREFETCHT0 64(R15)\n", "\tPREFETCHT0 64(R15)\n\tPREFETCHT1 64(R15)(AX*1)\n", -1},
		},
	},
	{
		src: "multi_avx2intacc_amd64.s", name: "multiAccQ80VNNIINT", runs: "multiAccQ80VNNIRunsINT",
		frame: "$3264-64", runsFrame: "$3264-80",
		doc: "over at most one tile, prefetching as multiAccQ80AVX2RunsINT does multiAccQ80AVX2INT's (the same code in its AVX-VNNI form): into L1 the rows pf bytes on (the next run) in place of the next tile, and into L2 those pf2 bytes on (the run after next).",
		repl: []repl{
			{"wstride int)\n", "wstride int, pf, pf2 int)\n", 1},
			{"\tMOVQ rb+32(FP), R12\n\tSHLQ $6, R12\n\tADDQ DI, R12\n\tMOVQ R12, 3248(SP)         // the next tile,",
				"\tMOVQ pf+64(FP), R12\n\tADDQ DI, R12\n\tMOVQ R12, 3248(SP)         // the next run,", 1},
			{"\tMOVQ 3248(SP), R15\n", "\tMOVQ 3248(SP), R15\n\tMOVQ pf2+72(FP), AX\n\tSUBQ pf+64(FP), AX\n", 2},
			{"\tPREFETCHT0 0(R15)\n", "\tPREFETCHT0 0(R15)\n\tPREFETCHT1 0(R15)(AX*1)\n", -1},
			{"\tPREFETCHT0 64(R15)\n", "\tPREFETCHT0 64(R15)\n\tPREFETCHT1 64(R15)(AX*1)\n", -1},
		},
	},
	{
		src: "multi_avx2int_amd64.s", name: "avx2ScoresQ80One", runs: "avx2ScoresQ80OneRuns",
		frame: "$40-80", runsFrame: "$48-96",
		doc: "prefetching into L1 the same rows of the next run, pf bytes on, in place of PFGROUPS2 groups on, and into L2 those of the run after next, pf2 bytes on, where the kernel prefetches nothing further (40(SP): pf2 − pf); both for each of its two streams (gen_avx2int.go's twoStream: one, 4 rows apart, over a run of fewer than 1024 rows).",
		repl: []repl{
			{"off *float32)\n", "off *float32, pf, pf2 int)\n", 1},
			{"\tMOVQ 16(SP), AX // prefetch pointer: PFGROUPS2 groups ahead, 192 bytes a block and stream\n\tIMULQ $4, AX // q8PFGroups\n\tADDQ DI, AX\n",
				"\tMOVQ pf2+88(FP), AX\n\tSUBQ pf+80(FP), AX\n\tMOVQ AX, 40(SP)            // from the next run's rows to the run after next's\n\tMOVQ pf+80(FP), AX // prefetch pointer: the same rows of the next run, 192 bytes a block and stream\n\tADDQ DI, AX\n", 1},
			{"\tMOVQ 8(SP), R14\n\tPREFETCHT0 0(AX)\n\tPREFETCHT0 0(AX)(R14*1)\n" +
				"\tPREFETCHT0 64(AX)\n\tPREFETCHT0 64(AX)(R14*1)\n" +
				"\tPREFETCHT0 128(AX)\n\tPREFETCHT0 128(AX)(R14*1)\n",
				"\tMOVQ 8(SP), R14\n\tMOVQ 40(SP), R15\n\tPREFETCHT0 0(AX)\n\tPREFETCHT0 0(AX)(R14*1)\n\tPREFETCHT1 0(AX)(R15*1)\n" +
					"\tPREFETCHT0 64(AX)\n\tPREFETCHT0 64(AX)(R14*1)\n\tPREFETCHT1 64(AX)(R15*1)\n" +
					"\tPREFETCHT0 128(AX)\n\tPREFETCHT0 128(AX)(R14*1)\n\tPREFETCHT1 128(AX)(R15*1)\n" +
					"\tADDQ R15, R14 // the second stream's, in the run after next\n\tPREFETCHT1 0(AX)(R14*1)\n\tPREFETCHT1 64(AX)(R14*1)\n\tPREFETCHT1 128(AX)(R14*1)\n", 2},
			{"a2Q80One_", "a2Q80OneR_", -1},
		},
	},
	{
		src: "multi_avx2int_amd64.s", name: "avx2ScoresQ80OneVNNI", runs: "avx2ScoresQ80OneVNNIRuns",
		frame: "$104-80", runsFrame: "$104-96",
		doc: "prefetching as avx2ScoresQ80OneRuns does avx2ScoresQ80One's: into L1 the same rows of the next run, pf bytes on, in place of PFGROUPS2 groups on, and into L2 those of the run after next, pf2 bytes on, where the kernel prefetches nothing further (8(SP): pf2 − pf); both for each of its two streams (gen_avx2int.go's twoStream: one, 4 rows apart, over a run of fewer than 1024 rows).",
		repl: []repl{
			{"off *float32)\n", "off *float32, pf, pf2 int)\n", 1},
			{"\tMOVQ 80(SP), AX // prefetch pointer: PFGROUPS2 groups ahead, 192 bytes a block and stream\n\tIMULQ $4, AX // q8PFGroups\n\tADDQ DI, AX\n",
				"\tMOVQ pf2+88(FP), AX\n\tSUBQ pf+80(FP), AX\n\tMOVQ AX, 8(SP)             // from the next run's rows to the run after next's\n\tMOVQ pf+80(FP), AX // prefetch pointer: the same rows of the next run, 192 bytes a block and stream\n\tADDQ DI, AX\n", 1},
			{"\tMOVQ 72(SP), R14\n\tPREFETCHT0 0(AX)\n\tPREFETCHT0 0(AX)(R14*1)\n" +
				"\tPREFETCHT0 64(AX)\n\tPREFETCHT0 64(AX)(R14*1)\n" +
				"\tPREFETCHT0 128(AX)\n\tPREFETCHT0 128(AX)(R14*1)\n",
				"\tMOVQ 72(SP), R14\n\tMOVQ 8(SP), R15\n\tPREFETCHT0 0(AX)\n\tPREFETCHT0 0(AX)(R14*1)\n\tPREFETCHT1 0(AX)(R15*1)\n" +
					"\tPREFETCHT0 64(AX)\n\tPREFETCHT0 64(AX)(R14*1)\n\tPREFETCHT1 64(AX)(R15*1)\n" +
					"\tPREFETCHT0 128(AX)\n\tPREFETCHT0 128(AX)(R14*1)\n\tPREFETCHT1 128(AX)(R15*1)\n" +
					"\tADDQ R15, R14 // the second stream's, in the run after next\n\tPREFETCHT1 0(AX)(R14*1)\n\tPREFETCHT1 64(AX)(R14*1)\n\tPREFETCHT1 128(AX)(R14*1)\n", 1},
			{"a2Q80OneVNNI_", "a2Q80OneVNNIR_", -1},
		},
	},
	{
		src: "multi_f16acc_amd64.s", name: "multiScoresF16Z4", runs: "multiScoresF16Z4Runs",
		frame: "$0-64", runsFrame: "$0-72",
		doc: "prefetching into L2 pf bytes past each row (the same row of the next run) in place of 12 KiB, without its L1 prefetches 3 KiB on.",
		repl: []repl{
			{"ostride int)\n", "ostride int, pf int)\n", 1},
			{"\tMOVQ ostride+56(FP), R14   // bytes between rows' scores\n",
				"\tMOVQ ostride+56(FP), R14   // bytes between rows' scores\n\tMOVQ pf+64(FP), AX         // the L2 prefetches' offset\n", 1},
			{"PREFETCHT1 12288(BX)", "PREFETCHT1 (BX)(AX*1)", -1},
			{"PREFETCHT1 12288(R15)", "PREFETCHT1 (R15)(AX*1)", -1},
			{"\tPREFETCHT0 3072(BX)\n", "", -1},
			{"\tPREFETCHT0 3072(R15)\n", "", -1},
		},
	},
	// Last, so that adding it left the other flavours' code where it was: placed first, the bf16
	// AVX-512 flavours after it measured 2–3% slower (kvcache TestPagedDecodeSpeed, Zen 4,
	// 3 alternations: paged bf16 6.78–6.92 ms, here 6.66–6.77, before it 6.72–6.86).
	{
		src: "multi_intacc_amd64.s", name: "multiAccQ80Z4INT", runs: "multiAccQ80Z4ListINT",
		frame: "$6848-64", runsFrame: "$6848-72",
		doc: "over a list of runs, a tile each: list holds (rows, row count, prefetch offset) for each run (and one more entry, read and not used), the row counts summing to m and each at most 64; each tile's prefetches go its entry's offset on (the run after next), and the next tile's prepass, pipelined into this tile's row loops, reads the next entry's rows.",
		repl: []repl{
			{"wstride int)\n", "wstride int, list *uintptr)\n", 1},
			{"\tMOVQ rows+24(FP), DI\n", "\tMOVQ list+64(FP), DI\n\tMOVQ DI, 6576(SP)          // the tile's entry in list\n\tMOVQ (DI), DI\n", 1},
			{"\tMOVQ 6480(SP), AX\n\tCMPQ AX, $64\n\tJLE  aQ80Z4_tn\n\tMOVQ $64, AX\naQ80Z4_tn:\n\tMOVQ AX, 6464(SP)\n\tSUBQ AX, 6480(SP)\n\tMOVQ rb+32(FP), R12\n\tSHLQ $7, R12\n\tADDQ DI, R12\n\tMOVQ R12, 6512(SP)         // the tile after next",
				"\tMOVQ 6576(SP), R12\n\tMOVQ 8(R12), AX            // the run's rows\n\tMOVQ AX, 6464(SP)\n\tSUBQ AX, 6480(SP)\n\tMOVQ 16(R12), R12\n\tADDQ DI, R12\n\tMOVQ R12, 6512(SP)         // the entry's offset on (the run after next)", 1},
			{"\tMOVQ 6480(SP), R11\n\tCMPQ R11, $64\n\tJLE  aQ80Z4_pn\n\tMOVQ $64, R11\naQ80Z4_pn:\n\tTESTQ R11, R11\n\tJZ   aQ80Z4_nopipe\n\tMOVQ 6464(SP), AX\n\tIMULQ rb+32(FP), AX\n\tADDQ DI, AX\n\tMOVQ AX, R14\n",
				"\tMOVQ 6480(SP), R11\n\tTESTQ R11, R11\n\tJZ   aQ80Z4_nopipe\n\tMOVQ 6576(SP), AX\n\tMOVQ 32(AX), R11           // the next run's rows\n\tMOVQ 24(AX), R14\n", 1},
			{"\tMOVQ 6464(SP), AX\n\tMOVQ AX, R12\n\tIMULQ rb+32(FP), R12\n\tADDQ R12, DI\n",
				"\tMOVQ 6464(SP), AX\n\tMOVQ 6576(SP), R12\n\tADDQ $24, R12\n\tMOVQ R12, 6576(SP)\n\tMOVQ (R12), DI             // the next run\n", 1},
			{"aQ80Z4_", "aQ80Z4L_", -1},
		},
	},
}

// fp8HScoresRuns is the runs flavour of gen_avx512.go's fp8 scores kernel name with a row pair
// in one vector's halves (multiScoresFP8BF16H, its Zen 4 loop's multiScoresFP8BF16HZ4; labels
// from q, the loop of four rows's, and h on): in its loop of four rows it prefetches into L1
// PFDISTZ bytes on in the rows of this run and the next (pf bytes past each row: the same row
// of the next run) taken as one, and pf2 bytes past each row (the run after next) into L2 in
// place of PFDISTZ2 (past a run's end that would be another head's rows); cur is scratch.
func fp8HScoresRuns(name, runs, q, h string) flavour {
	qr, hr := q[:len(q)-1]+"R_", h[:len(h)-1]+"R_"
	return flavour{
		src: "multi_avx512x_amd64.s", name: name, runs: runs,
		frame: "$648-72", runsFrame: "$648-96", defs: true, out: "multi_runs_avx512x_amd64.s",
		doc: "prefetching, in its loop of four rows, into L1 PFDISTZ bytes on in the rows of this run and the next (pf bytes past each row: the same row of the next run) taken as one, and pf2 bytes past each row (the run after next) into L2 in place of PFDISTZ2 (past a run's end that would be another head's rows); cur is scratch.",
		repl: []repl{
			{"off *float32)\n", "off *float32, pf, pf2, cur int)\n", 1},
			{q + "quad:\n\tCMPQ R10, $4\n\tJLT  " + q + "end\n", q + "quad:\n\tCMPQ R10, $4\n\tJLT  " + q + "end\n\tMOVQ R10, AX\n\tIMULQ R8, AX               // the bytes left in the run\n\tMOVQ $PFDISTZ, R12\n\tCMPQ AX, R12\n\tJGT  " + qr + "pfin\n\tMOVQ m+32(FP), R12\n\tIMULQ R8, R12\n\tNEGQ R12\n\tADDQ pf+72(FP), R12\n\tADDQ $PFDISTZ, R12         // PFDISTZ bytes on, into the next run\n" + qr + "pfin:\n\tMOVQ R12, cur+88(FP)\n", 1},
			{"\tPREFETCHT0 PFDISTZ(BX)\n\tPREFETCHT1 PFDISTZ2(BX)\n\tPREFETCHT0 PFDISTZ(R15)\n\tPREFETCHT1 PFDISTZ2(R15)\n\tPREFETCHT0 PFDISTZ(R13)\n\tPREFETCHT1 PFDISTZ2(R13)\n\tPREFETCHT0 PFDISTZ(DX)\n\tPREFETCHT1 PFDISTZ2(DX)\n",
				"\tMOVQ cur+88(FP), AX        // the L1 prefetches' offset (AX is the pending sums' buffer in " + qr + "pend)\n\tPREFETCHT0 (BX)(AX*1)\n\tPREFETCHT0 (R15)(AX*1)\n\tPREFETCHT0 (R13)(AX*1)\n\tPREFETCHT0 (DX)(AX*1)\n\tMOVQ pf2+80(FP), AX\n\tPREFETCHT1 (BX)(AX*1)\n\tPREFETCHT1 (R15)(AX*1)\n\tPREFETCHT1 (R13)(AX*1)\n\tPREFETCHT1 (DX)(AX*1)\n", 1},
			{q, qr, -1},
			{h, hr, -1},
		},
	}
}

// avx2fScoresRuns is the runs flavour of gen_avx2f.go's scores kernel name (labels from label
// on; frame its TEXT line's frame before gen_align.go): at each step (rows a, b and c of its
// three streams) the same three rows of the next run, pf bytes on, are prefetched into L2, a
// line each 64 bytes of a row, and stream c's L1 prefetches PFDISTF ahead are dropped (over a
// run's last rows they read the memory past it: in a paged cache another head's rows; streams
// a's and b's land in the run's later streams). Zen 4 with KVLAB_NO_AVX512=1, kvcache
// TestPagedBreakdown (one thread, 32768 cells, 8 KV heads of 128, 4 queries, thread CPU, 3
// alternations, load ~8), paged scores with stream c's prefetches kept → dropped: f16
// 4.05–4.12 → 3.30–3.62 ms, bf16 4.31–4.41 → 3.75–3.99, fp8 5.03–5.11 → 4.89–5.04 (the
// kernels a run a call with Prefetch of the next run: 4.9–5.1, 5.3–5.6, 6.1–6.6; contiguous
// 2.9, 3.3, 4.2). The next run's rows prefetched into L1 in place of all the PFDISTF
// prefetches: 4.97–5.07, 4.67–5.01, 4.69–4.90 (16 KiB runs of f16 and bf16 rows crowd L1); a
// Prefetch of the run two or three on besides, before each run: 4.57–4.88 (f16). pfc is how
// many times the kernel's text prefetches stream c PFDISTF ahead (its group loop's copies).
func avx2fScoresRuns(name, runs, label, frame string, pfc int) flavour {
	l := label[:len(label)-1] + "R_"
	return flavour{
		src: "multi_avx2f_amd64.s", name: name, runs: runs,
		frame: frame, runsFrame: strings.TrimSuffix(frame, "64") + "72", defs: true,
		doc: "prefetching at each step the same rows of the next run (pf bytes on) into L2, without stream c's prefetches PFDISTF ahead.",
		repl: []repl{
			{"ostride int)\n", "ostride int, pf int)\n", 1},
			{label + "rows:\n", label + "rows:\n\tMOVQ pf+64(FP), BX\n\tADDQ DI, BX                // row a of the next run: its lines, and rows b's and c's\n\tMOVQ R8, CX\n" +
				l + "pf:\n\tPREFETCHT1 (BX)\n\tPREFETCHT1 (BX)(AX*1)\n\tPREFETCHT1 (BX)(R14*1)\n\tADDQ $64, BX\n\tSUBQ $64, CX\n\tJG   " + l + "pf\n", 1},
			{"\tPREFETCHT0 PFDISTF(BX)(R14*1)\n", "", pfc},
			{label, l, -1},
		},
	}
}

// intAccRuns is the runs flavour of gen_intacc.go's kernel name (labels from label on) whose
// prefetch pointer starts at the tile after next (its comment what), as multiAccQ80Z4INT's:
// pf bytes past each tile's first row (the run after next) in place of 128 rows on.
func intAccRuns(name, runs, label, what string) flavour {
	return flavour{
		src: "multi_intacc_amd64.s", name: name, runs: runs,
		frame: "$6848-64", runsFrame: "$6848-72",
		doc: "prefetching pf bytes past each tile's first row (the run after next), not the tile after next.",
		repl: []repl{
			{"wstride int)\n", "wstride int, pf int)\n", 1},
			{"\tMOVQ rb+32(FP), R12\n\tSHLQ $7, R12\n\tADDQ DI, R12\n\tMOVQ R12, 6512(SP)         // " + what + "\n",
				"\tMOVQ pf+64(FP), R12\n\tADDQ DI, R12\n\tMOVQ R12, 6512(SP)         // pf bytes on (the run after next)\n", 1},
			{label, label[:len(label)-1] + "R_", -1},
		},
	}
}

// v8Z4AccRuns is the runs flavour of gen_intacc.go's Zen 4 8-bit nibble kernel name (labels
// from label on; blocks of bb bytes) as multiAccQ40V8Z4RunsINT is q4_0's: pf bytes past each
// tile's first row (the run after next) in place of 128 rows on, without the L2 prefetches
// 32 KiB further (its prefetches at the lines themselves).
func v8Z4AccRuns(name, runs, label string, bb int) flavour {
	step := fmt.Sprintf("prefetched 2·%d bytes a row-pair step", bb)
	return flavour{
		src: "multi_intacc_amd64.s", name: name, runs: runs,
		frame: "$6848-64", runsFrame: "$6848-72",
		doc: "prefetching pf bytes past each tile's first row (the run after next), not 32 KiB past the tile after next.",
		repl: []repl{
			{"wstride int)\n", "wstride int, pf int)\n", 1},
			{"\tMOVQ rb+32(FP), R12\n\tSHLQ $7, R12\n\tADDQ DI, R12\n\tMOVQ R12, 6512(SP)         // the tile after next, " + step + ", 32768 bytes further on",
				"\tMOVQ pf+64(FP), R12\n\tADDQ DI, R12\n\tMOVQ R12, 6512(SP)         // pf bytes on (the run after next), " + step, 1},
			{"PREFETCHT1 32768(R15)", "PREFETCHT1 (R15)", 6},
			{label, label[:len(label)-1] + "R_", -1},
		},
	}
}

// turboAccRuns is the runs flavour of gen_turboacc.go's 8-bit kernel name (labels from label
// on): its prefetches (pfRepl) sweep pf bytes on from each tile's first row, at the lines
// themselves and without the L2 prefetches pfFar further.
func turboAccRuns(name, runs, label string) flavour {
	return flavour{
		src: "multi_turboacc_amd64.s", name: name, runs: runs,
		frame: "$1744-64", runsFrame: "$1744-72",
		doc: "prefetching pf bytes past each tile's first row (the run after next), not 3 KiB past the tile after next and 32 KiB further.",
		repl: []repl{
			{"wstride int)\n", "wstride int, pf int)\n", 1},
			{"\tMOVQ rb+32(FP), R12\n\tSHLQ $7, R12\n\tADDQ DI, R12\n\tMOVQ R12, 1656(SP)         // the tile after next, prefetched 3072 bytes on (L2: 32768)",
				"\tMOVQ pf+64(FP), R12\n\tADDQ DI, R12\n\tMOVQ R12, 1656(SP)         // pf bytes on (the run after next)", 1},
			{"\tPREFETCHT0 3072(R15)\n\tPREFETCHT1 32768(R15)\n", "\tPREFETCHT0 (R15)\n", 1},
			{label, label[:len(label)-1] + "R_", -1},
		},
	}
}

// q5ScoresRuns is the runs flavour of multi_vnni_amd64.s's Zen 4 q5 scores kernel name (labels
// from label on): its prefetch pointer pf bytes on from each group of rows (the next run, as
// multiScoresQ40HdrZ4RunsVNNI's) in place of PFGROUPS groups on, the block's prefetches pfOld
// made pfNew: the near ones alone (PREFETCHT0), without the far ones (PREFETCHT1 HDRFAR on).
func q5ScoresRuns(name, runs, label, pfOld, pfNew string) flavour {
	return flavour{
		src: "multi_vnni_amd64.s", name: name, runs: runs, out: "multi_runs_vnni_amd64.s",
		frame: "$0-80", runsFrame: "$0-88", defs: true,
		doc: "prefetching pf bytes past each group of rows (the next run) in place of PFGROUPS groups on, into L1 alone (without the far prefetches HDRFAR further).",
		repl: []repl{
			{"off *float32)\n", "off *float32, pf int)\n", 1},
			{"\tMOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead\n\tSHLQ $4, AX\n\tIMULQ $PFGROUPS, AX\n\tADDQ DI, AX\n",
				"\tMOVQ pf+80(FP), AX         // prefetch pointer: pf bytes on (the next run)\n\tADDQ DI, AX\n", 1},
			{pfOld, pfNew, 1},
			{label, label[:len(label)-1] + "R_", -1},
		},
	}
}

// intelQ5AccRuns is the runs flavour of gen_intacc.go's Intel q5 values kernel name (labels
// from label on; its prefetch pointer at the tile after next, its comment what): pf bytes past
// each tile's first row (the run after next) in place of 128 rows on (for q5_1's, whose L1
// prefetches go 64 rows back from that pointer, at the pointer's rows), and without far
// L2 prefetches 32 KiB further (their count, far; the kernel's PREFETCHT1 32768(R15)), its near
// ones (their count, near) at the pointer's rows.
func intelQ5AccRuns(name, runs, label, what string, far, near int) flavour {
	f := intAccRuns(name, runs, label, what)
	if far > 0 {
		f.repl = append(f.repl, repl{"\tPREFETCHT1 32768(R15)\n", "", far})
	}
	if near > 0 {
		// multiAccQ51V8XINT's L1 prefetches go 64 rows back from its pointer (R11: the next
		// tile from the tile after next); here they go to the pointer's rows themselves.
		f.repl = append(f.repl, repl{"\tPREFETCHT0 (R15)(R11*1)\n", "\tPREFETCHT0 (R15)\n", near})
	}
	return f
}

// intelQ5ScoresRuns is the runs flavour of multi_vnni_amd64.s's Intel q5 scores kernel name
// (multiScoresQ50XGFNI, multiScoresQ51XGFNI; labels from label on; its prefetches a block the
// macro pfOld: six lines into L1 at the prefetch pointer, two far ones gap bytes apart HDRFAR
// on into L2, the pointer then moved on step bytes): the pointer pf bytes on from each group of
// rows (the next run) in place of PFGROUPS groups on, and the far prefetches far bytes past it
// (the run after that one's distance on: far = the offset of the later run less pf) in place of
// HDRFAR, where over a page's rows both read the memory past the page (its V rows, other heads').
func intelQ5ScoresRuns(name, runs, label, pfOld string, step, gap int) flavour {
	var near strings.Builder
	for o := 0; o < 384; o += 64 {
		fmt.Fprintf(&near, "\tPREFETCHT0 %d(AX)\n", o)
	}
	pfNew := strings.Replace(near.String(), "\tPREFETCHT0 0(AX)\n", "\tPREFETCHT0 (AX)\n", 1) +
		"\tADDQ far+88(FP), AX        // the far prefetches' run\n" +
		fmt.Sprintf("\tPREFETCHT1 (AX)\n\tPREFETCHT1 %d(AX)\n", gap) +
		"\tSUBQ far+88(FP), AX\n" +
		fmt.Sprintf("\tADDQ $%d, AX\n", step)
	return flavour{
		src: "multi_vnni_amd64.s", name: name, runs: runs, out: "multi_runs_vnni_amd64.s",
		frame: "$0-80", runsFrame: "$0-96", defs: true,
		doc: "prefetching pf bytes past each group of rows (the next run) in place of PFGROUPS groups on, and its far prefetches far bytes past those (a later run) in place of HDRFAR.",
		repl: []repl{
			{"off *float32)\n", "off *float32, pf, far int)\n", 1},
			{"\tMOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead\n\tSHLQ $4, AX\n\tIMULQ $PFGROUPS, AX\n\tADDQ DI, AX\n",
				"\tMOVQ pf+80(FP), AX         // prefetch pointer: pf bytes on (the next run)\n\tADDQ DI, AX\n", 1},
			{pfOld, pfNew, 1},
			{label, label[:len(label)-1] + "R_", -1},
		},
	}
}

// hdrScoresRuns is the runs flavour of multi_vnni_amd64.s's header-register Zen 4 scores
// kernel name (HDRK18Z4, HDRK20Z4), as multiScoresQ40HdrZ4RunsVNNI is q4_0's: the same macro
// after multi_vnni_runs_amd64.h, whose HDRPF aims the near prefetches pf bytes past each group
// of rows (the next run) and whose HDRFAR (0) the far ones at the same lines. The header
// leaves them so for what follows: these flavours come last in their file.
func hdrScoresRuns(name, runs, frame, runsFrame string) flavour {
	return flavour{
		src: "multi_vnni_amd64.s", name: name, runs: runs, out: "multi_runs_vnni_amd64.s",
		frame: frame, runsFrame: runsFrame, defs: true,
		pre: "#include \"multi_vnni_runs_amd64.h\"\n",
		doc: "prefetching pf bytes past each group of rows (the next run) in place of PFGROUPS groups on, its far prefetches at the same lines (multi_vnni_runs_amd64.h).",
		repl: []repl{
			{"off *float32)\n", "off *float32, pf int)\n", 1},
		},
	}
}

// t23ScoresRuns is the runs flavour of gen_tq4vnni.go's packed uniform-scale turbo3 or turbo2
// scores kernel name (T3PU, T2PU, T2PUS; labels from label on): its L1 prefetches pf bytes on from
// each group of rows (the run after next) in place of PFGROUPS groups on.
func t23ScoresRuns(name, runs, label string) flavour {
	return flavour{
		src: "multi_tq4vnni_amd64.s", name: name, runs: runs,
		frame: "$0-80", runsFrame: "$0-88", defs: true,
		doc: "prefetching pf bytes past each group of rows (the run after next) in place of PFGROUPS groups on.",
		repl: []repl{
			{"stage *uint32)\n", "stage *uint32, pf int)\n", 1},
			{"\tMOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead, 320 bytes\n\tSHLQ $4, AX                // per chunk of codes (a group of rows is at most 16·(16 + 4)\n\tIMULQ $PFGROUPS, AX        // bytes per chunk)\n\tADDQ DI, AX\n",
				"\tMOVQ pf+80(FP), AX         // prefetch pointer: pf bytes on (the run after next), 320 bytes\n\tADDQ DI, AX                // per chunk of codes\n", 1},
			{label, label[:len(label)-1] + "R_", -1},
		},
	}
}

// pairScoresRuns is the runs flavour of gen_tq4vnni.go's two-chunk scores kernel name (TQ4B2,
// T4B2; labels from label on): its L1 prefetches pf bytes on from each group of rows, without
// the L2 prefetches PFFAR further.
func pairScoresRuns(name, runs, label string) flavour {
	return flavour{
		src: "multi_tq4vnni_amd64.s", name: name, runs: runs,
		frame: "$0-80", runsFrame: "$0-88", defs: true,
		doc: "prefetching pf bytes past each group of rows (the run after next) in place of PFGROUPS groups on, without the L2 prefetches PFFAR further.",
		repl: []repl{
			{"stage *uint32)\n", "stage *uint32, pf int)\n", 1},
			{"\tMOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead, 320 bytes\n\tSHLQ $4, AX                // per chunk of codes (a group of rows is at most 16·(16 + 4)\n\tIMULQ $PFGROUPS, AX        // bytes per chunk)\n\tADDQ DI, AX\n",
				"\tMOVQ pf+80(FP), AX         // prefetch pointer: pf bytes on (the run after next), 320 bytes\n\tADDQ DI, AX                // per chunk of codes\n", 1},
			{"\tPREFETCHT1 PFFAR(AX)\n", "", 2},
			{"\tPREFETCHT1 PFFAR+64(AX)\n", "", 2},
			{"\tPREFETCHT1 PFFAR+128(AX)\n", "", 2},
			{"\tPREFETCHT1 PFFAR+192(AX)\n", "", 2},
			{"\tPREFETCHT1 PFFAR+256(AX)\n", "", 2},
			{label, label[:len(label)-1] + "R_", -1},
		},
	}
}

func main() {
	files := map[string]*strings.Builder{}
	var order []string
	copied := map[string]bool{}
	for _, f := range flavours {
		out := f.out
		if out == "" {
			out = "multi_runs_amd64.s"
		}
		b := files[out]
		if b == nil {
			b = &strings.Builder{}
			files[out] = b
			order = append(order, out)
			b.WriteString("// Code generated by gen_runs.go; DO NOT EDIT.\n\n//go:build amd64 && !purego\n\n#include \"textflag.h\"\n")
			if out == "multi_runs_amd64.s" {
				b.WriteString("#include \"accw_amd64.h\"\n")
			}
			b.WriteString("\n// The runs flavours of kernels (gen_runs.go): each a kernel of another file whose\n// prefetches go pf bytes on (pf, or pf1 and pf3, arguments after the kernel's).\n")
		}
		src, err := os.ReadFile(f.src)
		if err != nil {
			fail(err)
		}
		if f.gen != nil {
			// $PATH under go generate starts with its own toolchain's bin.
			cmd := exec.Command("go", append([]string{"run"}, f.gen...)...)
			cmd.Stderr = os.Stderr
			if src, err = cmd.Output(); err != nil {
				fail(fmt.Errorf("go run %s: %w", strings.Join(f.gen, " "), err))
			}
		}
		if f.defs && !copied[out+" "+f.src] {
			copied[out+" "+f.src] = true
			b.WriteString("\n// The macros of " + f.src + ".\n" + defines(string(src)))
		}
		body, err := runsKernel(string(src), f)
		if err != nil {
			fail(err)
		}
		b.WriteString("\n" + f.pre + body)
	}
	for _, out := range order {
		if err := os.WriteFile(out, []byte(pruneDefines(files[out].String())), 0o644); err != nil {
			fail(err)
		}
	}
}

// runsKernel is f's kernel's text from src made into its runs flavour.
func runsKernel(src string, f flavour) (string, error) {
	head := "// func " + f.name + "("
	i := strings.Index(src, head)
	if i < 0 {
		return "", fmt.Errorf("%s not found", f.name)
	}
	body := src[i:]
	end := len(body)
	for _, next := range []string{"\n// func ", "\nDATA ", "\nGLOBL ", "\n#define ", "\n#undef ", "\n#include "} {
		if j := strings.Index(body[len(head):], next); j >= 0 {
			end = min(end, len(head)+j+1)
		}
	}
	body = body[:end]
	// Without the comment lines that end it (those of what follows in src).
	for {
		t := strings.TrimRight(body, "\n")
		i := strings.LastIndex(t, "\n")
		if i < 0 || !strings.HasPrefix(t[i+1:], "//") {
			break
		}
		body = t[:i+1]
	}
	rs := append([]repl{
		{"TEXT ·" + f.name + "(SB)", "TEXT ·" + f.name + "(SB)", 1},
		{"(SB), NOSPLIT, " + f.frame + "\n", "(SB), NOSPLIT, " + f.runsFrame + "\n", -1},
		{"(SB), 0, " + f.frame + "\n", "(SB), 0, " + f.runsFrame + "\n", -1},
	}, f.repl...)
	for _, r := range rs {
		if r.n > 0 && strings.Count(body, r.old) != r.n {
			return "", fmt.Errorf("%s: %q found %d times, want %d", f.name, r.old, strings.Count(body, r.old), r.n)
		}
		body = strings.ReplaceAll(body, r.old, r.new)
	}
	if !strings.Contains(body, f.runsFrame+"\n") {
		return "", fmt.Errorf("%s: no TEXT line of frame %s", f.name, f.frame)
	}
	// The kernel's own name (its labels included) becomes the flavour's; the first line says
	// what the flavour changes.
	body = strings.ReplaceAll(body, f.name, f.runs)
	nl := strings.Index(body, "\n")
	body = body[:nl+1] + "// " + f.name + " " + f.doc + "\n" + body[nl+1:]
	return body, nil
}

// defines is the #define and #undef lines of src (each with its continuation lines), in
// order.
func defines(src string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.SplitAfter(src, "\n") {
		if strings.HasPrefix(l, "#define ") || strings.HasPrefix(l, "#undef ") {
			in = true
		}
		if in {
			b.WriteString(l)
			in = strings.HasSuffix(l, "\\\n")
		}
	}
	return b.String()
}

// pruneDefines is text without the #define blocks (and #undef lines) of the macros that
// nothing in it or in the files it includes names: src's macros are copied whole, and those of
// kernels that no flavour copies (or that only such macros use) would be dead text there.
func pruneDefines(text string) string {
	var inc strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(l, "#include \""); ok && name != "textflag.h\"" {
			b, err := os.ReadFile(strings.TrimSuffix(name, "\""))
			if err != nil {
				fail(err)
			}
			inc.Write(b)
		}
	}
	for {
		lines := strings.SplitAfter(text, "\n")
		// The lines of each macro's #define (continuations included) and #undef.
		own := map[string]map[int]bool{}
		in := ""
		for i, l := range lines {
			if in == "" {
				for _, p := range []string{"#define ", "#undef "} {
					if rest, ok := strings.CutPrefix(l, p); ok {
						in = strings.FieldsFunc(rest, func(r rune) bool { return r == '(' || r == ' ' || r == '\t' || r == '\n' })[0]
					}
				}
			}
			if in != "" {
				if own[in] == nil {
					own[in] = map[int]bool{}
				}
				own[in][i] = true
				if strings.HasPrefix(l, "#undef ") || !strings.HasSuffix(l, "\\\n") {
					in = ""
				}
			}
		}
		dead := map[int]bool{}
		for name, at := range own {
			re := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
			used := re.MatchString(inc.String())
			for i, l := range lines {
				if !used && !at[i] && re.MatchString(l) {
					used = true
				}
			}
			if !used {
				for i := range at {
					dead[i] = true
				}
			}
		}
		if len(dead) == 0 {
			return text
		}
		var b strings.Builder
		for i, l := range lines {
			if !dead[i] {
				b.WriteString(l)
			}
		}
		text = b.String()
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen_runs:", err)
	os.Exit(1)
}
