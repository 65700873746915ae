//go:build ignore

// gen_align rewrites kernels that gen_intacc.go, gen_runs.go (Zen 4's), gen_avx2intacc.go and
// gen_avx2f.go (fp8's; every AVX2 CPU's) wrote so that the 64-byte (32-byte) vectors in their frame (the tile's weights and codes they stage, spilled sums) sit 64-byte
// aligned whatever the caller's stack depth: Go aligns SP to 8 bytes only. Each listed kernel's
// frame grows to 2·F + 64 (F its own), BP = (SP + F + 63) &^ 63 first (the assembler saves and
// restores BP around a frame; the kernels do not use it), and the frame addresses of its vector
// instructions and LEAQs (the staged areas it reads through pointers) become N(BP) in place of
// N(SP); the scalars (counters, pointers) stay at N(SP), below F, so the two never overlap.
// Nothing else changes: the results are the kernel's, bit for bit. Run by `go generate
// ./native/kvq` after the generators it rewrites (stackalign_gen_amd64.go's go:generate line
// sorts after theirs). A kernel already rewritten is left as it is, one missing is warned about
// (its generator renamed or dropped it); one using BP, using a macro that addresses the frame,
// addressing a named local by a vector instruction, or with an offset that both a scalar and a
// vector instruction address stops it.
//
// Measured on AMD Zen 4 (EPYC Genoa, shared, load ~13; kvq's TestFrameDepthSpeed: each kernel
// called from eight stack depths 8 bytes apart, d 128, 4096 rows in cache, thread CPU time, 61
// calls a depth, the old and aligned kernels alternated in one process, three runs, median ns a
// row): the old kernels ran at two of eight depths (their frame 32-byte aligned: Zen 4 splits a
// 64-byte access in two 32-byte halves) as fast as aligned ones and 1–2 % slower at the other six
// (four of eight for the two-accumulator kernels): four accumulators q4_0 4.21–4.23 / 4.26–4.30
// (good depths / others) → 4.22–4.23 at every depth, q4_1 4.68–4.73 / 4.69–4.77 → 4.68–4.74,
// iq4_nl 4.40–4.44 / 4.46–4.51 → 4.40–4.44, q8_0 6.13–6.15 / 6.22–6.24 → 6.13–6.14, q5_0
// 7.26–7.32 / 7.34–7.42 → 7.25–7.34, q5_1 6.71–6.81 / 6.85–6.93 → 6.70–6.81; two accumulators
// q4_0 3.64–3.67 / 3.72–3.75 → 3.64–3.67, q4_1 4.48–4.49 / 4.54–4.58 → 4.48–4.49, iq4_nl
// 3.93–3.98 / 4.02–4.05 → 3.94–4.00, q8_0 4.80–4.82 / 4.88–4.90 → 4.80–4.87. In attn's
// TestDecodeBreakdown (six alternated runs, median of the per-run minima, ns a row) the values
// phase timed alone, which called them from a bad depth, went q4_0 4.69 → 4.50, q4_1 5.40 →
// 4.84, iq4_nl 5.17 → 4.58 (the breakdown's negative "rest"); whole decodes, which already
// called them from a good depth, moved within noise (q4_1 9.75 → 9.64, iq4_nl 9.36 → 9.23,
// q4_0 8.91 → 8.96, q8_0 13.27 → 13.24). Addressing the scalars through BP too (frame + 64,
// every N(SP) → N(BP)) was as flat but slower (q4_1 4.75 against the old kernel's 4.65–4.69 at
// every depth). The turbo kernels with 8-bit weights (gen_turboacc.go: their frame vectors are
// outside the row loop) showed no depth effect (turbo2/3/4 within 0.02 ns a row) and are left as
// they are, as are the non-Zen 4 AVX-512 kernels (not measured: Zen 4 runs the Z4 flavours).
//
// The AVX2 values kernels (gen_avx2intacc.go: 32-byte vectors, int16 and 8-bit weights; the
// same Zen 4 with KVLAB_NO_AVX512=1, the same test, two runs, the old kernel alternated in the
// same process) ran 3–5 % slower at six of eight depths (their frame 32-byte aligned at the other
// two), e.g. four accumulators q4_0 int16 9.20–9.28 / 9.54–9.61 → 9.23–9.24, q4_0 8-bit (four
// more runs of it alone) 7.04–7.13 / 7.14–7.28 → 7.04–7.14 (one of two runs among the others
// had it 7.20–7.24 against 7.03–7.16: noise or layout), q4_1 int16
// 10.06 / 10.36–10.40 → 9.93–9.95, q5_0 int16 11.23–11.33 / 11.58–11.68 → 11.29–11.31, q5_1
// int16 12.12 / 12.45–12.49 → 11.99–12.01, q8_0 int16 9.00–9.02 / 9.35–9.37 → 8.97–8.99, q8_0
// 8-bit 8.12–8.13 / 8.41–8.42 (at three depths) → 8.11–8.12, iq4_nl 10.11–10.21 / 10.46–10.54 →
// 10.12–10.14, q5_1 8-bit (U8) 10.07–10.08 / 10.36–10.39 → 10.09–10.11; two accumulators alike
// (q4_1 int16 7.09–7.16 / 7.48–7.52 → 7.09–7.11). In attn's TestDecodeBreakdown
// (KVLAB_NO_AVX512=1, four alternated runs, min / median of the per-run minima, ns a row, load
// ~7–10) the values phase went q4_0 8.00 / 8.08 → 7.76 / 7.85, iq4_nl 10.73 / 10.82 → 10.34 /
// 10.43, q8_0 10.99 / 11.51 → 10.49 / 11.16, q5_0 10.69 / 11.05 → 10.33 / 10.82, and whole
// decodes iq4_nl 20.19 / 20.88 → 19.93 / 20.17, q5_1 20.92 / 21.93 → 20.61 / 21.41, q4_0, q4_1
// and q8_0 within noise. On Intel (not measured here) a 32- or 64-byte access that crosses a
// cache line is a split load or store (an extra load-port cycle, two L1 accesses): alignment can
// only remove those; the two added instructions run once a call.
//
// fp8's AVX2 kernels (gen_avx2f.go; the same test, three runs, alternated with the old kernels in
// one process): values (multiAccFP8AVX2T) 11.76–12.45 at two depths / 12.55–13.67 at the others
// → 11.74–12.21 at five depths and 12.40–12.58 at three (no slower than the old kernel at any),
// scores (multiScoresFP8AVX2T) 13.41–13.53 / 13.70–13.99 → 13.43–13.53; TestDecodeBreakdown
// (KVLAB_NO_AVX512=1, fp8, three undisturbed alternated runs, min) values 13.00–13.33 → 12.39–12.89,
// whole 27.52–28.56 → 27.32–27.66 (the decode's own depth was a good one). Their named locals
// (x-8(SP), the frame's top) stay where the assembler puts them, above the vectors.
package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// kernels are the rewritten kernels by file: the AVX-512 ones are mostly flavours that Zen 4
// (pickZen4, zen4Stream) or Intel (intelCPU: pickFar, pickIntel, q51X, runsIntel) take, the AVX2
// ones run on every AVX2 CPU (the VNNI ones on those with AVX-VNNI). fp8's AVX2 scores kernels
// of the contiguous rows and of the runs (multiScoresFP8AVX2TW, multiScoresFP8AVX2TRuns) align
// their scratches themselves (BP).
var kernels = map[string][]string{
	"multi_intacc_amd64.s":     {"multiAccQ40V8Z4INT", "multiAccQ41V8Z4INT", "multiAccIQ4NLV8Z4INT", "multiAccQ80Z4INT", "multiAccQ50V8Z4INT", "multiAccQ51V8Z4INT", "multiAccQ51V8XINT", "multiAccQ50VINT", "multiAccQ50VIINT", "multiAccQ50VZ4INT"},
	"multi_intacc2_amd64.s":    {"multiAccQ40V8Z4TwoINT", "multiAccQ41V8Z4TwoINT", "multiAccIQ4NLV8Z4TwoINT", "multiAccQ80Z4TwoINT"},
	"multi_runs_amd64.s":       {"multiAccQ80Z4RunsINT", "multiAccQ80Z4ListINT", "multiAccQ40V8Z4RunsINT", "multiAccQ41V8Z4RunsINT", "multiAccIQ4NLV8Z4RunsINT", "multiAccQ50VRunsINT", "multiAccQ51V8Z4RunsINT", "multiAccQ50VIRunsINT", "multiAccQ51V8XRunsINT", "multiAccFP8AVX2TPF", "multiAccQ80AVX2RunsINT"},
	"multi_avx2f_amd64.s":      {"multiScoresFP8AVX2T", "multiAccFP8AVX2T"},
	"multi_avx2intacc_amd64.s": {"multiAccQ40B8AVX2INT", "multiAccQ41B8AVX2INT", "multiAccQ50B8AVX2INT", "multiAccQ51B8AVX2INT", "multiAccQ51U8AVX2INT", "multiAccQ50A8AVX2INT", "multiAccQ80A8AVX2INT", "multiAccIQ4NLAVX2INT", "multiAccIQ4NLA8AVX2INT", "multiAccIQ4NLA8TwoAVX2INT", "multiAccQ40AVX2INT", "multiAccQ41AVX2INT", "multiAccQ50AVX2INT", "multiAccQ51AVX2INT", "multiAccQ80AVX2INT", "multiAccQ40B8TwoAVX2INT", "multiAccQ41B8TwoAVX2INT", "multiAccQ50B8TwoAVX2INT", "multiAccQ51B8TwoAVX2INT", "multiAccQ51U8TwoAVX2INT", "multiAccQ50A8TwoAVX2INT", "multiAccQ80A8TwoAVX2INT", "multiAccIQ4NLTwoAVX2INT", "multiAccQ40TwoAVX2INT", "multiAccQ41TwoAVX2INT", "multiAccQ50TwoAVX2INT", "multiAccQ51TwoAVX2INT", "multiAccQ80TwoAVX2INT", "multiAccQ40B8VNNIINT", "multiAccQ41B8VNNIINT", "multiAccQ80A8VNNIINT", "multiAccIQ4NLA8VNNIINT", "multiAccQ40B8TwoVNNIINT", "multiAccQ41B8TwoVNNIINT", "multiAccQ80A8TwoVNNIINT", "multiAccIQ4NLA8TwoVNNIINT", "multiAccQ50A8VNNIINT", "multiAccQ51U8VNNIINT", "multiAccQ50A8TwoVNNIINT", "multiAccQ51U8TwoVNNIINT"},
}

// tag ends the second line of a rewritten kernel.
const tag = "// the frame's vectors 64-byte aligned (gen_align.go)\n"

var (
	spRef   = regexp.MustCompile(`(^|[^-+A-Za-z0-9_.])(-?[0-9]+)\(SP\)`)
	spBare  = regexp.MustCompile(`([\s,])\(SP\)`)                // (SP)(R12*1): offset 0
	spNamed = regexp.MustCompile(`[A-Za-z_]\w*[-+][0-9]+\(SP\)`) // x-8(SP): the frame's top, pseudo-SP
	bpUse   = regexp.MustCompile(`\bBP\b`)
	textHdr = regexp.MustCompile(`^(TEXT ·\w+\(SB\), [A-Z0-9|]+, \$)([0-9]+)(-[0-9]+)$`)
)

// spMacros are the names of s's macros (#define) whose body addresses the frame by SP or uses
// such a macro: a kernel that uses one is not rewritten (its text does not show the addresses).
func spMacros(s string) map[string]bool {
	bodies := map[string]string{}
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		f := strings.Fields(lines[i])
		if len(f) < 2 || f[0] != "#define" {
			continue
		}
		name, _, _ := strings.Cut(f[1], "(")
		body := lines[i]
		for strings.HasSuffix(strings.TrimSpace(lines[i]), "\\") && i+1 < len(lines) {
			i++
			body += "\n" + lines[i]
		}
		bodies[name] += body
	}
	m := map[string]bool{}
	for more := true; more; {
		more = false
		for name, body := range bodies {
			if m[name] {
				continue
			}
			sp := strings.Contains(body, "(SP)")
			for _, w := range regexp.MustCompile(`\w+`).FindAllString(body, -1) {
				sp = sp || (m[w] && w != name)
			}
			if sp {
				m[name], more = true, true
			}
		}
	}
	return m
}

// align rewrites kernel name in s.
func align(s, name string) (string, error) {
	start := strings.Index(s, "\nTEXT ·"+name+"(SB)")
	if start < 0 {
		fmt.Fprintf(os.Stderr, "gen_align: warning: no kernel %s (renamed or gone: update the list)\n", name)
		return s, nil
	}
	start++
	end := strings.Index(s[start+1:], "\nTEXT ")
	if end < 0 {
		end = len(s)
	} else {
		end += start + 2
	}
	lines := strings.SplitAfter(s[start:end], "\n")
	if len(lines) > 2 && strings.HasSuffix(lines[2], tag) {
		return s, nil // already aligned
	}
	hdr := strings.TrimSuffix(lines[0], "\n")
	m := textHdr.FindStringSubmatch(hdr)
	if m == nil {
		return "", fmt.Errorf("%s: TEXT line %q", name, hdr)
	}
	frame, _ := strconv.Atoi(m[2])
	if frame == 0 {
		return "", fmt.Errorf("%s: no frame", name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d%s\n\tLEAQ %d(SP), BP\n\tANDQ $-64, BP             %s", m[1], 2*frame+64, m[3], frame+63, tag)
	scalar, vector := map[string]bool{}, map[string]bool{}
	macros := spMacros(s)
	for _, l := range lines[1:] {
		code, comment := l, ""
		if i := strings.Index(l, "//"); i >= 0 {
			code, comment = l[:i], l[i:]
		}
		if bpUse.MatchString(code) {
			return "", fmt.Errorf("%s uses BP: %q", name, l)
		}
		op := strings.Fields(code)
		if len(op) == 0 {
			b.WriteString(l)
			continue
		}
		if mac, _, _ := strings.Cut(op[0], "("); macros[mac] {
			return "", fmt.Errorf("%s uses macro %s, which addresses the frame by SP", name, mac)
		}
		vec := op[0][0] == 'V' || op[0] == "LEAQ"
		offs := []string{}
		for _, r := range spRef.FindAllStringSubmatch(code, -1) {
			offs = append(offs, r[2])
		}
		if spBare.MatchString(code) {
			offs = append(offs, "0")
		}
		for _, o := range offs {
			if vec {
				vector[o] = true
			} else {
				scalar[o] = true
			}
		}
		if vec {
			if spNamed.MatchString(code) {
				return "", fmt.Errorf("%s: a vector instruction addresses a named local: %q", name, l)
			}
			code = spRef.ReplaceAllString(code, "${1}${2}(BP)")
			code = spBare.ReplaceAllString(code, "${1}(BP)")
		}
		b.WriteString(code + comment)
	}
	for o := range scalar {
		if vector[o] {
			return "", fmt.Errorf("%s: %s(SP) is both a scalar's and a vector's", name, o)
		}
	}
	return s[:start] + b.String() + s[end:], nil
}

func main() {
	for file, names := range kernels {
		src, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		s := string(src)
		for _, n := range names {
			if s, err = align(s, n); err != nil {
				fmt.Fprintln(os.Stderr, "gen_align:", file, err)
				os.Exit(1)
			}
		}
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
