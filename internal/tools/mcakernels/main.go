// Command mcakernels runs llvm-mca over the loops of the generated assembly kernels, to predict
// their throughput on CPUs this machine is not (Intel Xeon, other AMD Zen generations) from
// LLVM's instruction tables. It is a developer tool; no test or build needs it.
//
//	go run ./internal/tools/mcakernels [flags] SPEC...
//
// A SPEC is a kernel's name (the TEXT symbol in native/kvq/*_amd64.s, without the middle dot),
// optionally followed by the loops to weigh and how often each runs per unit of work (a row,
// say): multiScoresF16AVX512:blk*2,pair*0.5 reports the inner loop labelled blk run twice and the
// body of the pair loop outside blk run half a time per row, and their sum. A kernel that is one
// macro has no labels of its own: its loops are L1, L2, ... in address order. label/N is the
// loop less the span that its N-th forward branch skips, label%N that span alone, for code run
// on some iterations only: multiScoresQ40HdrVNNI:L2/1*0.25,L2%1*0.0625 weighs a block's work a
// quarter a row and the chunk's header reads, on every fourth block, a sixteenth. A bare kernel name
// lists every loop of the kernel (a label that a later branch of the same kernel jumps back to)
// with its cycles per iteration. A loop's region is its instructions from the label to the last
// branch back to it, less the regions of the loops nested in it.
//
// The translation from Go's assembler syntax is done by the assembler itself: the tool builds
// the package's test binary (go test -c, which links every kernel), finds the kernel's symbol,
// maps each byte of it to its source line through the binary's line table, and disassembles the
// region's bytes with llvm-objdump into the AT&T syntax that llvm-mca reads. Macros, masks,
// embedded broadcasts and the VEX instructions that gen_vexlib.go writes as BYTE directives all
// come out as the CPU decodes them. Branch targets are replaced with one local label.
//
// For each -mcpu the tool prints llvm-mca's cycles per iteration (total cycles over iterations:
// the resource and dependency bound of the loop run back to back, from the instruction
// tables, all loads hitting L1), the block reciprocal throughput (the resource bound alone) and
// the most used resources (ports or pipes) per iteration: the bottleneck. Nothing here knows the
// memory system: streamed rows cost what the caches and prefetchers add on top.
//
// For the AMD models the VNNI dot products are priced as the FMA of their width (-zenvnni,
// default on; ZenVNNI says why): LLVM's znver4 model, the same in LLVM 19 and LLVM 22 (and
// their znver5, which is that model), prices their register forms at four pipe-cycles. With
// the proxy the judged decode's q5_0 values kernel, multiAccQ50VINT, reads 31.5 cycles a row
// where 48.5 without, against ~28 measured in cache on a Zen 4 (7.5–7.6 ns a row at ~3.7 GHz);
// the scores kernels with memory-form dot products read ~15 % above their Zen 4 measurements
// with it (multiScoresQ50Z4GFNI 20.5 against ~17.6) and ~2 % below without.
package main

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func main() {
	pkg := flag.String("pkg", "./native/kvq", "package whose test binary holds the kernels")
	bin := flag.String("bin", "", "use this test binary (go test -c) rather than building one")
	mcpus := flag.String("mcpu", "znver4,sapphirerapids,icelake-server", "comma-separated llvm-mca -mcpu values (LLVM 19's and 22's znver5 is their znver4 model)")
	mca := flag.String("mca", firstTool("llvm-mca-19", "llvm-mca"), "llvm-mca binary")
	objdump := flag.String("objdump", firstTool("llvm-objdump-19", "llvm-objdump"), "llvm-objdump binary")
	ghz := flag.Float64("ghz", 3.0, "clock for the ns columns, GHz")
	iters := flag.Int("iterations", 200, "llvm-mca -iterations")
	show := flag.Bool("asm", false, "print each region's translated assembly")
	specFile := flag.String("specs", "", "read SPECs from this file too: one a line, text after # ignored")
	csv := flag.Bool("csv", false, "print comma-separated values: kernel, loop, per unit, mcpu, cycles/iter, RThroughput, bottleneck")
	zenVNNI := flag.Bool("zenvnni", true, "for the AMD models (znver*), price the VNNI dot products as the FMA of their width (ZenVNNI)")
	flag.Parse()
	specs := flag.Args()
	if *specFile != "" {
		data, err := os.ReadFile(*specFile)
		check(err)
		for _, l := range strings.Split(string(data), "\n") {
			if i := strings.Index(l, "#"); i >= 0 {
				l = l[:i]
			}
			if l = strings.TrimSpace(l); l != "" {
				specs = append(specs, l)
			}
		}
	}
	if len(specs) == 0 {
		fmt.Fprintln(os.Stderr, "usage: mcakernels [flags] kernel[:label*perunit,...] ...")
		os.Exit(2)
	}
	path := *bin
	if path == "" {
		dir, err := os.MkdirTemp("", "mcakernels")
		check(err)
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "kernels.test")
		cmd := exec.Command("go", "test", "-c", "-o", path, *pkg)
		cmd.Stderr = os.Stderr
		check(cmd.Run())
	}
	b, err := Open(path)
	check(err)
	t := &Tool{Bin: b, MCA: *mca, Objdump: *objdump, Iterations: *iters, ZenVNNI: *zenVNNI}
	cpus := strings.Split(*mcpus, ",")
	if *csv {
		fmt.Println("kernel,loop,per_unit,mcpu,cycles_per_iter,rthroughput,two_fma_bound,bottleneck")
	} else {
		fmt.Printf("%-34s %-10s %6s %-16s %9s %8s %9s %8s  %s\n", "kernel", "loop", "x/unit", "mcpu", "cyc/iter", "RThru", "cyc/unit", fmt.Sprintf("ns@%.1f", *ghz), "bottleneck (resource cycles/iter)")
	}
	for _, spec := range specs {
		name, loops, err := ParseSpec(spec)
		check(err)
		regions, err := t.Regions(name, loops)
		check(err)
		for _, cpu := range cpus {
			total := 0.0
			for _, r := range regions {
				if *show && cpu == cpus[0] {
					fmt.Printf("# %s %s: %d instructions; its forward branches skip %v\n%s", name, r.Label, r.Instrs, r.Spans, r.Asm)
				}
				res, err := t.Run(r.Asm, cpu)
				if err != nil {
					fmt.Printf("%-34s %-10s %6s %-16s error: %v\n", name, r.Label, "", cpu, err)
					continue
				}
				total += res.CyclesPerIter * r.Weight
				if *csv {
					fmt.Printf("%s,%s,%g,%s,%.3f,%.2f,%.2f,%s\n", name, r.Label, r.Weight, cpu, res.CyclesPerIter, res.RThroughput, res.TwoFMA, strings.ReplaceAll(res.Bottleneck, ",", ";")+"; "+res.TwoFMASplit)
					continue
				}
				w := fmt.Sprint(r.Weight)
				if r.Weight == 0 {
					w = "-"
				}
				fmt.Printf("%-34s %-10s %6s %-16s %9.2f %8.2f %9s %8s  %s\n", name, r.Label, w, cpu, res.CyclesPerIter, res.RThroughput,
					perUnit(res.CyclesPerIter*r.Weight, r.Weight), perUnit(res.CyclesPerIter*r.Weight / *ghz, r.Weight), res.Bottleneck+twoFMAText(res))
			}
			if len(loops) > 1 && !*csv {
				fmt.Printf("%-34s %-10s %6s %-16s %9s %8s %9.2f %8.2f\n", name, "sum", "", cpu, "", "", total, total / *ghz)
			}
		}
	}
}

// twoFMAText is the two-FMA bound for the text table, "" where the model has none.
func twoFMAText(r *Result) string {
	if r.TwoFMA == 0 {
		return ""
	}
	return fmt.Sprintf("; with port 5's FMA %.2f (%s)", min(r.TwoFMA, r.RThroughput), r.TwoFMASplit)
}

func perUnit(v, w float64) string {
	if w == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func firstTool(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return names[len(names)-1]
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcakernels:", err)
		os.Exit(1)
	}
}

// LoopWeight is one loop of a SPEC: its label's suffix (after the kernel's name and "_") and
// how many times it runs per unit of work (0: not weighed).
type LoopWeight struct {
	Label  string
	Weight float64
}

// ParseSpec splits "kernel:label*w,label*w".
func ParseSpec(spec string) (string, []LoopWeight, error) {
	name, rest, ok := strings.Cut(spec, ":")
	if !ok || rest == "" {
		return name, nil, nil
	}
	var loops []LoopWeight
	for _, part := range strings.Split(rest, ",") {
		label, ws, _ := strings.Cut(part, "*")
		w := 1.0
		if ws != "" {
			var err error
			if w, err = strconv.ParseFloat(ws, 64); err != nil {
				return "", nil, fmt.Errorf("spec %q: weight %q: %v", spec, ws, err)
			}
		}
		loops = append(loops, LoopWeight{label, w})
	}
	return name, loops, nil
}

// Binary is a Go test binary: its ELF file, symbols and line table.
type Binary struct {
	path  string
	syms  []elf.Symbol
	table *gosym.Table
}

// Open reads a Go binary's symbols and line table.
func Open(path string) (*Binary, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil, err
	}
	pcln := f.Section(".gopclntab")
	text := f.Section(".text")
	if pcln == nil || text == nil {
		return nil, errors.New(path + ": no .gopclntab or .text")
	}
	data, err := pcln.Data()
	if err != nil {
		return nil, err
	}
	table, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil, err
	}
	return &Binary{path: path, syms: syms, table: table}, nil
}

// Kernel is one assembly function in the binary: its address range, the source line of each
// byte, and its source file's lines.
type Kernel struct {
	Name       string
	Start, End uint64
	Lines      []int // source line of each byte from Start
	File       string
	Src        []string // the source file's lines (Src[0] is line 1)
}

// Kernel finds the ABI0 function whose symbol ends in "."+name+".abi0".
func (b *Binary) Kernel(name string) (*Kernel, error) {
	suffix := "." + name + ".abi0"
	for _, s := range b.syms {
		if !strings.HasSuffix(s.Name, suffix) || s.Size == 0 {
			continue
		}
		k := &Kernel{Name: name, Start: s.Value, End: s.Value + s.Size}
		for pc := k.Start; pc < k.End; pc++ {
			file, line, _ := b.table.PCToLine(pc)
			if k.File == "" {
				k.File = file
			}
			if file != k.File {
				line = 0
			}
			k.Lines = append(k.Lines, line)
		}
		src, err := os.ReadFile(k.File)
		if err != nil {
			return nil, err
		}
		k.Src = strings.Split(string(src), "\n")
		return k, nil
	}
	return nil, fmt.Errorf("kernel %s: no symbol *%s in the binary (not linked: unused by the package and its tests?)", name, suffix)
}

var (
	labelRE  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_·]*):`)
	insnRE   = regexp.MustCompile(`^\s*([0-9a-f]+):\s+(\S.*)$`)
	branchRE = regexp.MustCompile(`^(j[a-z]+)\s+(0x[0-9a-f]+)`)
)

// Insn is one disassembled instruction.
type Insn struct {
	Addr uint64
	Text string // AT&T syntax, branch targets made .Lloop
	Line int    // source line
	// Target is a branch's target address (0: not a branch).
	Target uint64
}

// Loop is a backward branch's range of instructions, [Start, End), named by the source label
// just above its first instruction, or L<n> where the kernel is one macro (no label of its own).
type Loop struct {
	Label      string
	Start, End uint64
}

// Disasm disassembles the whole kernel.
func (t *Tool) Disasm(k *Kernel) ([]Insn, error) {
	cmd := exec.Command(t.Objdump, "-d", "--no-show-raw-insn",
		fmt.Sprintf("--start-address=%#x", k.Start), fmt.Sprintf("--stop-address=%#x", k.End), t.Bin.path)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", t.Objdump, err)
	}
	var insns []Insn
	for _, l := range strings.Split(string(out), "\n") {
		m := insnRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		addr, _ := strconv.ParseUint(m[1], 16, 64)
		text := CleanInsn(m[2])
		if text == "" {
			continue
		}
		in := Insn{Addr: addr, Text: text, Line: k.Lines[addr-k.Start]}
		if b := branchRE.FindStringSubmatch(strings.Join(strings.Fields(m[2]), " ")); b != nil {
			in.Target, _ = strconv.ParseUint(b[2][2:], 16, 64)
		}
		insns = append(insns, in)
	}
	return insns, nil
}

// Loops finds the backward branches inside the kernel: each target and the last branch back
// to it make a loop.
func (k *Kernel) Loops(insns []Insn) []Loop {
	var loops []Loop
	for i, in := range insns {
		if in.Target == 0 || in.Target > in.Addr || in.Target < k.Start {
			continue
		}
		end := k.End
		if i+1 < len(insns) {
			end = insns[i+1].Addr
		}
		found := false
		for j := range loops {
			if loops[j].Start == in.Target {
				loops[j].End, found = end, true
			}
		}
		if !found {
			loops = append(loops, Loop{Start: in.Target, End: end})
		}
	}
	sort.Slice(loops, func(i, j int) bool { return loops[i].Start < loops[j].Start })
	for i := range loops {
		loops[i].Label = fmt.Sprintf("L%d", i+1)
		for _, in := range insns {
			if in.Addr == loops[i].Start {
				// The label is the nearest line above the instruction's that is a label, with
				// only blank and comment lines between.
				for ln := in.Line - 1; ln >= 1 && ln <= len(k.Src); ln-- {
					src := strings.TrimSpace(k.Src[ln-1])
					if m := labelRE.FindStringSubmatch(src); m != nil {
						loops[i].Label = m[1]
						break
					}
					if src != "" && !strings.HasPrefix(src, "//") {
						break
					}
				}
			}
		}
	}
	return loops
}

// Region is the translated text of one loop's body (its nested loops' bodies left out).
type Region struct {
	Label  string
	Weight float64
	Asm    string
	Instrs int
	// Spans is how many instructions each forward branch of the region skips (label/N, label%N).
	Spans []int
}

// Tool holds what the translation and the runs need.
type Tool struct {
	Bin        *Binary
	MCA        string
	Objdump    string
	Iterations int
	// ZenVNNI: Run reprices the VNNI dot products for the AMD models (ZenVNNI).
	ZenVNNI bool
}

// Regions translates the loops of kernel name: those listed, or all of them.
func (t *Tool) Regions(name string, want []LoopWeight) ([]Region, error) {
	k, err := t.Bin.Kernel(name)
	if err != nil {
		return nil, err
	}
	insns, err := t.Disasm(k)
	if err != nil {
		return nil, err
	}
	loops := k.Loops(insns)
	if len(loops) == 0 {
		return nil, fmt.Errorf("kernel %s: no loops", name)
	}
	if want == nil {
		for _, l := range loops {
			want = append(want, LoopWeight{l.Label, 0})
		}
	}
	var out []Region
	for _, w := range want {
		// label/N leaves out the span that the region's N-th forward branch skips (from the
		// branch to its target); label%N is that span alone: code a loop runs on some
		// iterations only, such as a chunk's headers read on its first block.
		label, span, only := w.Label, 0, false
		if i := strings.IndexAny(label, "/%"); i >= 0 {
			n, err := strconv.Atoi(label[i+1:])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("kernel %s: %q: want label/N or label%%N, N ≥ 1", name, w.Label)
			}
			label, span, only = label[:i], n, w.Label[i] == '%'
		}
		var loop *Loop
		for i := range loops {
			if l := loops[i].Label; l == label || strings.HasSuffix(l, "_"+label) {
				loop = &loops[i]
			}
		}
		if loop == nil {
			var names []string
			for _, l := range loops {
				names = append(names, l.Label)
			}
			return nil, fmt.Errorf("kernel %s: no loop %q (loops: %s)", name, w.Label, strings.Join(names, ", "))
		}
		keep := func(uint64) bool { return true }
		if span > 0 {
			from, to, err := forwardSpan(insns, *loop, loops, span)
			if err != nil {
				return nil, fmt.Errorf("kernel %s: %s: %v", name, w.Label, err)
			}
			keep = func(a uint64) bool { return (a >= from && a < to) == only }
		}
		asm, n := Translate(insns, *loop, loops, keep)
		if n == 0 {
			return nil, fmt.Errorf("kernel %s: loop %s has no instructions of its own", name, loop.Label)
		}
		var spans []int
		for i := 1; ; i++ {
			from, to, err := forwardSpan(insns, *loop, loops, i)
			if err != nil {
				break
			}
			_, c := Translate(insns, *loop, loops, func(a uint64) bool { return a >= from && a < to })
			spans = append(spans, c)
		}
		out = append(out, Region{Label: loop.Label + w.Label[len(label):], Weight: w.Weight, Asm: asm, Instrs: n, Spans: spans})
	}
	return out, nil
}

// forwardSpan is the addresses [from, to) that the n-th forward branch of loop's own body
// skips: from the instruction after the branch to its target.
func forwardSpan(insns []Insn, loop Loop, all []Loop, n int) (uint64, uint64, error) {
	seen := 0
	for i, in := range insns {
		if in.Addr < loop.Start || in.Addr >= loop.End || in.Target <= in.Addr || in.Target > loop.End || i+1 == len(insns) {
			continue
		}
		if seen++; seen == n {
			return insns[i+1].Addr, in.Target, nil
		}
	}
	return 0, 0, fmt.Errorf("loop %s has %d forward branches, not %d", loop.Label, seen, n)
}

// Translate is loop's instructions for which keep holds, less those of the loops nested in
// it, as llvm-mca input.
func Translate(insns []Insn, loop Loop, all []Loop, keep func(addr uint64) bool) (string, int) {
	var sb strings.Builder
	sb.WriteString(".Lloop:\n")
	n := 0
	for _, in := range insns {
		if in.Addr < loop.Start || in.Addr >= loop.End {
			continue
		}
		nested := false
		for _, o := range all {
			if o != loop && o.Start >= loop.Start && o.End <= loop.End && in.Addr >= o.Start && in.Addr < o.End {
				nested = true
			}
		}
		if !nested && keep(in.Addr) {
			sb.WriteString(in.Text + "\n")
			n++
		}
	}
	return sb.String(), n
}

// CleanInsn is one instruction of llvm-objdump's output without comments and symbol names,
// spaces normalized, a branch's target made .Lloop (llvm-mca does not follow branches).
func CleanInsn(text string) string {
	if i := strings.Index(text, "#"); i >= 0 {
		text = text[:i]
	}
	if i := strings.Index(text, "<"); i >= 0 {
		text = text[:i]
	}
	f := strings.Fields(text)
	if len(f) == 0 {
		return ""
	}
	if strings.HasPrefix(f[0], "j") || f[0] == "call" || f[0] == "callq" {
		return f[0] + " .Lloop"
	}
	return f[0] + " " + strings.Join(f[1:], " ")
}

// vnniOps are the AVX-512 VNNI / AVX-VNNI dot products ZenVNNI reprices.
var vnniOps = regexp.MustCompile(`^(\{vex\} )?vpdp(busds?|wssds?) `)

// ZenVNNI rewrites each VNNI dot product of asm (VPDPBUSD, VPDPBUSDS, VPDPWSSD, VPDPWSSDS, EVEX
// or {vex}) as VFMADD231PS with the same operands: an accumulating operation of the same width,
// latency 4, one a cycle at 512 bits (two at 256) on pipes FP0 and FP1 in LLVM's znver4 model.
// That model (LLVM 19 and LLVM 22 alike; their znver5 is the same model) prices the register
// forms at two cycles on both FP0 and FP1 whatever their width (reciprocal throughput 2.0 for
// xmm, ymm and zmm: four pipe-cycles for a 512-bit one, where Zen 4 issues a 512-bit multiply
// a cycle as two 256-bit halves) and the memory forms at one cycle on FP3 (reciprocal
// throughput 1.0 zmm, 0.5 ymm): unpriced as written, a register-form dot product costs four
// times a memory-form one, and a kernel that trades VPBROADCASTD + register forms for
// broadcast memory operands reads 2.5× faster (q5_0's values row-pair loop: 40 → 16 cycles).
// The FMA proxy keeps each sum's chain (it reads and writes the accumulator) and the
// documented rate; which two pipes Zen 4 really gives the dot products is not settled here.
func ZenVNNI(asm string) string {
	lines := strings.Split(asm, "\n")
	for i, l := range lines {
		if m := vnniOps.FindString(l); m != "" {
			lines[i] = "vfmadd231ps " + l[len(m):]
		}
	}
	return strings.Join(lines, "\n")
}

// Result is what the tool reads from llvm-mca's report.
type Result struct {
	CyclesPerIter float64
	RThroughput   float64
	// TwoFMA is, for the Intel models (sapphirerapids, icelake-server), the loop's resource
	// bound with the 512-bit instructions that the model issues to port 0 alone free to take
	// port 5 as well: the second 512-bit FMA unit of Xeon cores, which LLVM's models (derived
	// from the client cores) leave out. 0 for the other models.
	TwoFMA      float64
	TwoFMASplit string // port 0's and port 5's fixed cycles and the movable ones, for TwoFMA
	Bottleneck  string
	Report      string
}

// Run runs llvm-mca on asm for cpu (through ZenVNNI for the AMD models where t.ZenVNNI).
func (t *Tool) Run(asm, cpu string) (*Result, error) {
	if t.ZenVNNI && strings.HasPrefix(cpu, "znver") {
		asm = ZenVNNI(asm)
	}
	cmd := exec.Command(t.MCA, "-mtriple=x86_64-unknown-linux-gnu", "-mcpu="+cpu, fmt.Sprintf("-iterations=%d", t.Iterations))
	cmd.Stdin = strings.NewReader(asm)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return ParseMCA(string(out))
}

// ParseMCA reads cycles per iteration, the block reciprocal throughput and the most used
// resources from an llvm-mca report.
func ParseMCA(rep string) (*Result, error) {
	r := &Result{Report: rep}
	var iters, cycles float64
	lines := strings.Split(rep, "\n")
	res := map[string]string{} // "[3]" -> name
	var pressure []float64
	var heads []string
	for i, l := range lines {
		f := strings.Fields(l)
		switch {
		case strings.HasPrefix(l, "Iterations:"):
			iters, _ = strconv.ParseFloat(f[1], 64)
		case strings.HasPrefix(l, "Total Cycles:"):
			cycles, _ = strconv.ParseFloat(f[2], 64)
		case strings.HasPrefix(l, "Block RThroughput:"):
			r.RThroughput, _ = strconv.ParseFloat(f[2], 64)
		case len(f) >= 3 && strings.HasPrefix(f[0], "[") && f[1] == "-" && len(pressure) == 0:
			res[f[0]] = f[2]
		case strings.HasPrefix(l, "Resource pressure per iteration:") && i+2 < len(lines):
			heads = strings.Fields(lines[i+1])
			for _, v := range strings.Fields(lines[i+2]) {
				p, _ := strconv.ParseFloat(v, 64) // "-" is 0
				pressure = append(pressure, p)
			}
		}
	}
	if iters == 0 || cycles == 0 {
		return nil, errors.New("llvm-mca: no Iterations/Total Cycles in its report")
	}
	r.CyclesPerIter = cycles / iters
	type rp struct {
		name string
		p    float64
	}
	var ps []rp
	for i, h := range heads {
		if i < len(pressure) && pressure[i] > 0 {
			name := res[h]
			if name == "" {
				name = h
			}
			ps = append(ps, rp{name, pressure[i]})
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].p > ps[j].p })
	var top []string
	for i := 0; i < len(ps) && i < 3; i++ {
		top = append(top, fmt.Sprintf("%s %.2f", ps[i].name, ps[i].p))
	}
	r.Bottleneck = strings.Join(top, ", ")
	r.TwoFMA, r.TwoFMASplit = twoFMA(lines, heads, res, iters)
	return r, nil
}

// twoFMA recomputes an Intel model's resource bound a loop iteration with the zmm instructions
// issued to port 0 alone (FMA, VNNI dot products, conversions, multiplies: the FMA unit's work)
// free to go to port 5 too, as on Xeon cores with two 512-bit FMA units. It is the bound of
// the busiest port after the best split, or of the 6-wide rename (uops over 6), whichever is
// higher; 0 where the model is not an Intel one with ports 0 and 5.
func twoFMA(lines, heads []string, res map[string]string, iters float64) (float64, string) {
	idx := map[string]int{}
	for i, h := range heads {
		name := res[h]
		for _, p := range []string{"SPRPort", "ICXPort"} {
			if strings.HasPrefix(name, p) {
				n, err := strconv.Atoi(strings.TrimPrefix(name, p))
				if err == nil {
					idx[fmt.Sprint(n)] = i
				}
			}
		}
	}
	p0, ok0 := idx["0"]
	p5, ok5 := idx["5"]
	p1 := idx["1"]
	if !ok0 || !ok5 {
		return 0, ""
	}
	load := make([]float64, len(heads))
	flex := 0.0
	uops := 0.0
	on := false
	for _, l := range lines {
		if strings.HasPrefix(l, "Resource pressure by instruction:") {
			on = true
			continue
		}
		if strings.HasPrefix(l, "Total uOps:") {
			f := strings.Fields(l)
			uops, _ = strconv.ParseFloat(f[2], 64)
		}
		if !on || strings.HasPrefix(strings.TrimSpace(l), "[0]") {
			continue
		}
		f := strings.Fields(l)
		if len(f) <= len(heads) {
			if len(f) == 0 {
				on = false
			}
			continue
		}
		v := make([]float64, len(heads))
		for i := range heads {
			v[i], _ = strconv.ParseFloat(f[i], 64)
		}
		insn := strings.Join(f[len(heads):], " ")
		if strings.Contains(insn, "%zmm") && v[p0] > 0 && v[p5] == 0 && v[p1] == 0 {
			flex += v[p0]
			v[p0] = 0
		}
		for i := range v {
			load[i] += v[i]
		}
	}
	bound := uops / iters / 6
	for i, x := range load {
		if i != p0 && i != p5 && x > bound {
			bound = x
		}
	}
	pair := (load[p0] + load[p5] + flex) / 2
	for _, x := range []float64{load[p0], load[p5], pair} {
		if x > bound {
			bound = x
		}
	}
	return bound, fmt.Sprintf("p0 %.1f p5 %.1f movable %.1f", load[p0], load[p5], flex)
}
