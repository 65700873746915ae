//go:build ignore

// gen_runs writes multi_runs_amd64.s: the "runs" flavours of kernels for a paged cache's pages
// (DotManyMultiRuns, AccumulateManyMultiRuns), each a copy of a kernel gen_intacc.go,
// gen_f16acc.go, gen_tq4vnni.go or gen_turboacc.go wrote whose prefetches go pf bytes on, pf an argument after the kernel's own,
// where the kernel's go a fixed distance past the rows it reads. A paged cache's run of one
// page is one tile of at most 64 rows; the drivers (multi_runs_amd64.go: accIntRuns,
// scoresRuns) pass the offset of a later run, so the prefetches reach the pages to come rather
// than the memory that follows a page's rows (the same head's V rows, or another head's).
// Everything else is the kernel's, so the results are its, bit for bit; each replacement must
// match as many times as it says, so a change to a kernel that moves its prefetches stops the
// generator rather than leaving a flavour behind. Run with `go generate ./native/kvq` (after
// gen_intacc.go, gen_f16acc.go, gen_tq4vnni.go and gen_turboacc.go: runs_gen_amd64.go's
// go:generate line comes after theirs in file order). A kernel that uses its file's macros
// (defs) gets them copied ahead of it.
package main

import (
	"fmt"
	"os"
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
	turboAccRuns("multiAccT4FBINT", "multiAccT4FBRunsINT", "aT4FB_"),
	turboAccRuns("multiAccT4BINT", "multiAccT4BRunsINT", "aT4B_"),
	turboAccRuns("multiAccT3BINT", "multiAccT3BRunsINT", "aT3B_"),
	turboAccRuns("multiAccT2BINT", "multiAccT2BRunsINT", "aT2B_"),
	turboAccRuns("multiAccT2BMINT", "multiAccT2BMRunsINT", "aT2BM_"),
	pairScoresRuns("multiScoresTQ4B2VNNI", "multiScoresTQ4B2RunsVNNI", "TQ4B2_"),
	pairScoresRuns("multiScoresT4B2VNNI", "multiScoresT4B2RunsVNNI", "T4B2_"),
	pairScoresRuns("multiScoresTQ4B2UVNNI", "multiScoresTQ4B2URunsVNNI", "TQ4B2U_"),
	{
		src: "multi_f16acc_amd64.s", name: "multiScoresF16Z4", runs: "multiScoresF16Z4Runs",
		frame: "$0-64", runsFrame: "$0-72",
		doc: "prefetching into L2 pf bytes past each row (the same row of the next run) in place of 12 KiB.",
		repl: []repl{
			{"ostride int)\n", "ostride int, pf int)\n", 1},
			{"\tMOVQ ostride+56(FP), R14   // bytes between rows' scores\n",
				"\tMOVQ ostride+56(FP), R14   // bytes between rows' scores\n\tMOVQ pf+64(FP), AX         // the L2 prefetches' offset\n", 1},
			{"PREFETCHT1 12288(BX)", "PREFETCHT1 (BX)(AX*1)", -1},
			{"PREFETCHT1 12288(R15)", "PREFETCHT1 (R15)(AX*1)", -1},
		},
	},
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
	var b strings.Builder
	b.WriteString("// Code generated by gen_runs.go; DO NOT EDIT.\n\n//go:build amd64 && !purego\n\n#include \"textflag.h\"\n\n")
	b.WriteString("// The runs flavours of kernels (gen_runs.go): each a kernel of multi_intacc_amd64.s or\n// multi_f16acc_amd64.s whose prefetches go pf bytes on, pf an argument after the kernel's.\n")
	copied := map[string]bool{}
	for _, f := range flavours {
		src, err := os.ReadFile(f.src)
		if err != nil {
			fail(err)
		}
		if f.defs && !copied[f.src] {
			copied[f.src] = true
			b.WriteString("\n// The macros of " + f.src + ".\n" + defines(string(src)))
		}
		body, err := runsKernel(string(src), f)
		if err != nil {
			fail(err)
		}
		b.WriteString("\n" + body)
	}
	if err := os.WriteFile("multi_runs_amd64.s", []byte(b.String()), 0o644); err != nil {
		fail(err)
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
	for _, next := range []string{"\n// func ", "\nDATA ", "\nGLOBL "} {
		if j := strings.Index(body[len(head):], next); j >= 0 {
			end = min(end, len(head)+j+1)
		}
	}
	body = body[:end]
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

// defines is the #define lines of src (each with its continuation lines), in order.
func defines(src string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.SplitAfter(src, "\n") {
		if strings.HasPrefix(l, "#define ") {
			in = true
		}
		if in {
			b.WriteString(l)
			in = strings.HasSuffix(l, "\\\n")
		}
	}
	return b.String()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen_runs:", err)
	os.Exit(1)
}
