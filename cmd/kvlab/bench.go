package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"
	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Microbenchmarks of the engine (decode attention over a synthetic cache)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchAttnCmd())
	cmd.AddCommand(newBenchModelCmd())
	cmd.AddCommand(newBenchSpillCmd())
	return cmd
}

// benchAttnOptions are the flags of `kvlab bench attn`.
type benchAttnOptions struct {
	ctx      []int
	pairs    []kvq.Pair
	heads    int
	kvHeads  int
	headDim  int
	threads  int
	device   string
	iters    int
	memBytes int64
}

// benchRow is one measurement: one format pair at one context length.
type benchRow struct {
	Ctx          int     `json:"ctx"`
	KV           string  `json:"kv"`
	BytesPerCell float64 `json:"bytes_per_cell"`    // K+V bytes of one cell of one layer, all KV heads
	KVBytes      int64   `json:"kv_bytes"`          // bytes one decode step reads
	Seconds      float64 `json:"seconds_per_token"` // the best round (CPU) or the mean (CUDA)
	// MedianSeconds and Rounds: the CPU path's median round and how many rounds it timed.
	MedianSeconds float64 `json:"median_seconds_per_token,omitempty"`
	Rounds        int     `json:"rounds,omitempty"`
	// CPUSeconds (CPU path, --threads 1) is the smallest thread CPU time of any round (not
	// necessarily the round Seconds came from): it leaves out the time the thread waited for a
	// core, so that runs on a busy machine compare. Off Linux cputime.Thread falls back to the
	// wall clock, and it is then the best round's wall time, as Seconds is.
	CPUSeconds float64 `json:"cpu_seconds_per_token,omitempty"`
	GBps       float64 `json:"gbps"`         // KVBytes / Seconds, in 10⁹ bytes per second
	RatioF16   float64 `json:"ratio_to_f16"` // Seconds / f16's Seconds at the same ctx; 0 without f16
	// BWFraction is GBps over the machine's measured bandwidth; with --threads 1 (CPU) the
	// yardstick is timed in the thread's CPU time, and so is this side: KVBytes / CPUSeconds
	// over it, so that both use one clock (fillRatios).
	BWFraction float64 `json:"bw_fraction"`
	// SlowPath (CPU) is kvq.KernelWarning: the pair has no fast decode kernel here.
	SlowPath string `json:"slow_path,omitempty"`
	// HugePages (CPU, where hugemem.Huge and the stores are large enough to be advised) is the
	// fraction of the pair's K and V rows on 2 MiB transparent huge pages after the timed
	// rounds (kvcache.Cache.HugePages): a cache the system left on 4 KiB pages decodes slower,
	// so a row well below 1 is not comparable with the others.
	HugePages *float64 `json:"huge_page_fraction,omitempty"`
}

// benchReport is the whole command's output.
type benchReport struct {
	Device        string     `json:"device"`
	DeviceName    string     `json:"device_name"`
	Threads       int        `json:"threads,omitempty"`
	Heads         int        `json:"heads"`
	KVHeads       int        `json:"kv_heads"`
	HeadDim       int        `json:"head_dim"`
	BandwidthGBps float64    `json:"mem_bandwidth_gbps"`
	Method        string     `json:"bandwidth_method"`
	ReadGBps      float64    `json:"read_bandwidth_gbps,omitempty"` // CUDA: a streaming-read kernel, for context
	Kernels       string     `json:"kernels,omitempty"`             // CPU: kvq.KernelISA, the instruction sets the kernels use
	Results       []benchRow `json:"results"`
}

func newBenchAttnCmd() *cobra.Command {
	var (
		o        benchAttnOptions
		ctxList  string
		kvList   string
		asJSON   bool
		memMiB   int
		deviceFl string
	)
	cmd := &cobra.Command{
		Use:   "attn",
		Short: "Decode attention alone over a synthetic KV cache: time per token, GB/s, share of memory bandwidth",
		Long: `Times one decode step of attention (one query position, one layer) over a synthetic cache of
each context length and KV format pair, and prints per row: the time per token, the KV bytes read
per second, the ratio to f16's time at the same context, and the fraction of the machine's memory
bandwidth measured in the same command.

Quantized decode should be bandwidth-bound, not kernel-bound: its time should scale
with the bytes it reads, so q4_0 should take about 54/192 of f16's time at long context.

  --device cpu    native/attn.Decode over native/kvcache on --threads goroutines; the bandwidth
                  yardstick is a large-buffer read loop on as many threads, on the same pages
                  as the caches (2 MiB transparent huge pages where Linux grants them;
                  KVLAB_NO_HUGEPAGES=1 keeps the default pages for both), its best pass (with
                  --threads 1 timed in the thread's CPU time, so that a busy machine does not
                  pull it below what the decodes stream in their best rounds). The pairs of one
                  context are timed in interleaved rounds and each keeps its best round (the
                  JSON has the median too, and with --threads 1 the smallest thread CPU time
                  of any round, which leaves out waits for a core: on Linux; elsewhere the
                  best round's wall time), so a busy machine slows every pair alike; with
                  --threads 1 the share of bandwidth ("of bandwidth", bw_fraction) is that CPU
                  time's rate over the yardstick's, both on the thread's CPU clock, while
                  µs/token and GB/s stay the best round's wall time; all the
                  pairs' caches of one context are in memory at once (f16 at 131072 cells,
                  8 KV heads × 128: 512 MiB). Each row's huge_page_fraction (JSON) is how
                  much of its cache the system backs with 2 MiB pages after the rounds; a
                  row below 95 % is named on stderr, as its time is not comparable (a
                  cache on 4 KiB pages decodes slower).
  --device cuda   the GPU engine's decode (native/cuda/engine) with its split plan and combine;
                  the yardstick is the card's device-to-device copy rate (bytes read + written
                  per second), measured here.`,
		Example: "  kvlab bench attn --ctx 4096,32768 --kv f16,q8_0,q4_0,q8_0/q4_0\n" +
			"  kvlab bench attn --device cuda --ctx 65536,131072 --kv f16,q8_0,q4_0,q8_0/q4_0 --heads 40 --kv-heads 8 --head-dim 128 --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.ctx, err = parseInts(ctxList, "--ctx", 1); err != nil {
				return err
			}
			if o.pairs, err = kvq.ParsePairs(kvList); err != nil {
				return err
			}
			if o.kvHeads < 1 || o.heads < 1 || o.heads%o.kvHeads != 0 {
				return fmt.Errorf("--heads %d must be a positive multiple of --kv-heads %d", o.heads, o.kvHeads)
			}
			if o.headDim < kvq.MinDim {
				return fmt.Errorf("--head-dim %d is below the minimum %d", o.headDim, kvq.MinDim)
			}
			if o.iters < 1 {
				return fmt.Errorf("--iters %d must be positive", o.iters)
			}
			if o.threads < 1 {
				o.threads = runtime.GOMAXPROCS(0)
			}
			o.memBytes = int64(memMiB) << 20
			o.device = deviceFl
			var rep benchReport
			switch deviceFl {
			case "cpu":
				rep, err = benchAttnCPU(o, cmd.ErrOrStderr())
			case "cuda":
				rep, err = benchAttnCUDA(o, cmd.ErrOrStderr())
			default:
				return fmt.Errorf("--device %q: want cpu or cuda", deviceFl)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return writeBenchTable(cmd.OutOrStdout(), rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&ctxList, "ctx", "4096,32768,131072", "comma-separated context lengths (cells)")
	f.StringVar(&kvList, "kv", "f16,q8_0,q4_0,q8_0/q4_0,tq4", "comma-separated KV format pairs")
	f.IntVar(&o.heads, "heads", 32, "query heads")
	f.IntVar(&o.kvHeads, "kv-heads", 8, "KV heads")
	f.IntVar(&o.headDim, "head-dim", 128, "head dimension")
	f.IntVar(&o.threads, "threads", 0, "CPU threads (default: GOMAXPROCS)")
	f.IntVar(&o.iters, "iters", 20, "timed decode steps per row (at least; the CPU path times the pairs in interleaved rounds, 0.3 s per pair at least, and keeps each pair's best round)")
	f.IntVar(&memMiB, "mem-mib", 1024, "size of the buffer that measures memory bandwidth, MiB")
	f.StringVar(&deviceFl, "device", "cpu", "cpu or cuda")
	f.BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}

// fillRatios sets each row's ratio to f16 at the same context and its bandwidth fraction: the
// row's bytes per second over the yardstick's, both on one clock (the thread's CPU time with
// one CPU thread, CPUSeconds, where the row's GBps is on the wall clock).
func fillRatios(rep *benchReport) {
	f16 := map[int]float64{}
	for _, r := range rep.Results {
		if r.KV == "f16" {
			f16[r.Ctx] = r.Seconds
		}
	}
	for i := range rep.Results {
		r := &rep.Results[i]
		if t, ok := f16[r.Ctx]; ok && t > 0 {
			r.RatioF16 = r.Seconds / t
		}
		if rep.BandwidthGBps > 0 {
			gbps := r.GBps
			if rep.Device == "cpu" && rep.Threads == 1 && r.CPUSeconds > 0 {
				// The yardstick's clock (readBandwidth.pass): the thread's CPU time.
				gbps = float64(r.KVBytes) / r.CPUSeconds / 1e9
			}
			r.BWFraction = gbps / rep.BandwidthGBps
		}
	}
}

func writeBenchTable(w io.Writer, rep benchReport) error {
	if rep.Device == "cpu" {
		threads := fmt.Sprintf("%d threads", rep.Threads)
		if rep.Threads == 1 {
			threads = "1 thread"
		}
		fmt.Fprintf(w, "decode attention on the CPU (%s, %s kernels), %d heads / %d KV heads × %d; memory read bandwidth %.1f GB/s (%s)\n\n",
			threads, rep.Kernels, rep.Heads, rep.KVHeads, rep.HeadDim, rep.BandwidthGBps, rep.Method)
	} else {
		fmt.Fprintf(w, "decode attention on %s, %d heads / %d KV heads × %d; copy bandwidth %.0f GB/s (%s), streaming read %.0f GB/s\n\n",
			rep.DeviceName, rep.Heads, rep.KVHeads, rep.HeadDim, rep.BandwidthGBps, rep.Method, rep.ReadGBps)
	}
	t := &table{header: []string{"ctx", "kv", "B/cell", "KV MiB", "µs/token", "GB/s", "× f16", "of bandwidth"}, left: map[int]bool{1: true}}
	var slow []string
	for _, r := range rep.Results {
		kv := r.KV
		if r.SlowPath != "" {
			kv += " *"
			if !slices.Contains(slow, r.SlowPath) {
				slow = append(slow, r.SlowPath)
			}
		}
		ratio := "-"
		if r.RatioF16 > 0 {
			ratio = fmt.Sprintf("%.2f", r.RatioF16)
		}
		t.add(strconv.Itoa(r.Ctx), kv, strconv.FormatFloat(r.BytesPerCell, 'g', 6, 64),
			fmt.Sprintf("%.1f", float64(r.KVBytes)/(1<<20)), fmt.Sprintf("%.1f", r.Seconds*1e6),
			fmt.Sprintf("%.1f", r.GBps), ratio, fmt.Sprintf("%.0f%%", 100*r.BWFraction))
	}
	if err := t.write(w); err != nil {
		return err
	}
	for _, s := range slow {
		if _, err := fmt.Fprintln(w, "* "+s); err != nil {
			return err
		}
	}
	return nil
}

// ---- CPU

// readBandwidth is the CPU bandwidth yardstick: a buffer read with attn.ReadBandwidth's
// vector loop, split over threads goroutines, timed one pass at a time.
type readBandwidth struct {
	buf     []byte
	threads int
	passes  int
	best    float64 // bytes per second, the best pass so far
}

// maxBandwidthPasses bounds the yardstick's passes (each reads --mem-mib), so short contexts
// with many rounds do not spend their time on it.
const maxBandwidthPasses = 24

func newReadBandwidth(bytes int64, threads int) *readBandwidth {
	// The same pages as the caches' row stores (hugemem: transparent huge pages where Linux
	// gives them on request): a yardstick on 4 KiB pages reads slower than rows on huge pages
	// stream (a plain read loop on this Zen 4 VM: 13.4–15.1 GB/s against 15.8–20.8), so it
	// would flatter every format's fraction of it.
	buf := hugemem.Bytes(int(max(bytes, 1<<20)))
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12) // touch every page before timing
	}
	return &readBandwidth{buf: buf, threads: threads}
}

// pass reads the buffer once and keeps the best rate; past maxBandwidthPasses it does nothing.
// With one thread the pass is timed in that thread's CPU time (cputime.Thread; the wall clock
// off Linux), which leaves out the waits for a core that a busy machine adds to a pass of
// --mem-mib more often than to a decode round, several times shorter: timed on the wall clock,
// on the Intel Xeon the benches ran on (2 vCPUs, load ~13), the yardstick's best pass read
// 6.3 GB/s where the f16 decode's best round streamed 9.0 (142 % of it). On a quiet machine
// the two clocks agree.
func (r *readBandwidth) pass() {
	if r.passes >= maxBandwidthPasses {
		return
	}
	r.passes++
	if r.threads == 1 {
		runtime.LockOSThread()
		c0 := cputime.Thread()
		attn.ReadBandwidth(r.buf)
		c := cputime.Thread() - c0
		runtime.UnlockOSThread()
		if c > 0 {
			r.best = max(r.best, float64(len(r.buf))/c.Seconds())
		}
		return
	}
	per := (len(r.buf) + r.threads - 1) / r.threads
	start := time.Now()
	var wg sync.WaitGroup
	for t := 0; t < r.threads; t++ {
		wg.Go(func() { attn.ReadBandwidth(r.buf[min(t*per, len(r.buf)):min((t+1)*per, len(r.buf))]) })
	}
	wg.Wait()
	r.best = max(r.best, float64(len(r.buf))/time.Since(start).Seconds())
}

// bwClock is the yardstick's clock in benchReport.Method: a thread's CPU time with one thread.
func bwClock(threads int) string {
	if threads == 1 {
		return " (thread CPU time)"
	}
	return ""
}

// minHugeFraction is the huge-page coverage below which bench attn warns that a pair's cache
// did not get the pages asked for (the rest of a buffer's last 2 MiB page may be on 4 KiB pages).
const minHugeFraction = 0.95

func benchAttnCPU(o benchAttnOptions, errw io.Writer) (benchReport, error) {
	rep := benchReport{Device: "cpu", DeviceName: runtime.GOARCH, Threads: o.threads, Heads: o.heads, KVHeads: o.kvHeads,
		HeadDim: o.headDim, Method: "large-buffer read loop, best pass, interleaved with the rounds" + bwClock(o.threads) + "; it and the caches on " + hugemem.Pages(), Kernels: kvq.KernelISA()}
	// The yardstick is read three times now and once more in each timing round (up to
	// maxBandwidthPasses), so a busy machine slows it as it slows the pairs; its best pass is
	// the one reported.
	bw := newReadBandwidth(o.memBytes, o.threads)
	for range 3 {
		bw.pass()
	}
	prog := newProgress(errw, len(o.ctx)*len(o.pairs), "bench attn")
	defer prog.Finish()
	d, hn := o.headDim, o.kvHeads
	r := rand.New(rand.NewPCG(1, 2))
	q := make([]float32, o.heads*d)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	out := make([]float32, o.heads*d)
	shape := attn.Shape{Heads: o.heads, KVHeads: hn, HeadDimK: d, HeadDimV: d, Scale: float32(1 / math.Sqrt(float64(d))), Threads: o.threads}
	for _, n := range o.ctx {
		// Every pair's cache of this context is built first, then the pairs are timed in
		// rounds, one decode step each per round, so a noisy neighbour slows all of them
		// alike; each pair's time is its best round (noise only ever adds time), the median
		// is kept beside it.
		runs := make([]func() error, len(o.pairs))
		caches := make([]*kvcache.Cache, len(o.pairs))
		for k, p := range o.pairs {
			c, err := kvcache.New(kvcache.Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: p, MaxCells: n, Seed: 1})
			if err != nil {
				return rep, err
			}
			if err := fillRandom(c, 1, n, hn*d, r); err != nil {
				return rep, err
			}
			caches[k] = c
			keys, vals := c.Keys(0, true), c.Values(0, true)
			runs[k] = func() error { return attn.Decode(out, q, shape, keys, vals, 0, n) }
			if err := runs[k](); err != nil { // warm up: page in the cache, size the pools
				return rep, err
			}
			prog.Add(1)
		}
		times, cpu := make([][]float64, len(o.pairs)), make([]float64, len(o.pairs))
		// One thread decodes on this goroutine (attn.Shape.Threads): its OS thread's CPU time
		// is the decode's.
		oneThread := o.threads == 1
		if oneThread {
			runtime.LockOSThread()
		}
		start := time.Now()
		for round := 0; round < o.iters || time.Since(start) < time.Duration(len(o.pairs))*300*time.Millisecond; round++ {
			for k := range runs {
				t0, c0 := time.Now(), cputime.Thread()
				if err := runs[k](); err != nil {
					runtime.UnlockOSThread()
					return rep, err
				}
				times[k] = append(times[k], time.Since(t0).Seconds())
				if c := (cputime.Thread() - c0).Seconds(); oneThread && (cpu[k] == 0 || c < cpu[k]) {
					cpu[k] = c
				}
			}
			bw.pass()
		}
		if oneThread {
			runtime.UnlockOSThread()
		}
		for k, p := range o.pairs {
			ts := times[k]
			slices.Sort(ts)
			sec := ts[0]
			bytes := p.Bytes(int64(n), d, d, hn)
			rep.Results = append(rep.Results, benchRow{Ctx: n, KV: p.String(), BytesPerCell: p.BytesPerToken(d, d, hn),
				KVBytes: bytes, Seconds: sec, MedianSeconds: ts[len(ts)/2], Rounds: len(ts), CPUSeconds: cpu[k], GBps: float64(bytes) / sec / 1e9,
				SlowPath: kvq.KernelWarning(p, d, d)})
			if cov := caches[k].HugePages(); hugemem.Huge() && cov.Bytes > 0 {
				f := cov.Fraction()
				rep.Results[len(rep.Results)-1].HugePages = &f
				if f < minHugeFraction {
					fmt.Fprintf(errw, "bench attn: ctx %d %s: %.0f%% of the cache on 2 MiB pages (the system did not grant the rest): its time is not comparable\n", n, p, 100*f)
				}
			}
		}
	}
	rep.BandwidthGBps = bw.best / 1e9
	fillRatios(&rep)
	return rep, nil
}

// kvFiller is a KV cache filled a chunk of cells at a time: the CPU cache and the CUDA engine's.
type kvFiller interface {
	Write(layer int, k, v []float32, n int) error
	Commit(n int) error
}

// fillRandom appends n cells of standard-normal K and V rows of row floats each to layers 0 to
// layers-1 of c, a chunk of cells at a time, each chunk drawn afresh from r (the same rows in
// every layer).
func fillRandom(c kvFiller, layers, n, row int, r *rand.Rand) error {
	const chunk = 2048
	k := make([]float32, min(chunk, n)*row)
	v := make([]float32, len(k))
	for pos := 0; pos < n; pos += chunk {
		m := min(chunk, n-pos)
		for i := range k[:m*row] {
			k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		for l := range layers {
			if err := c.Write(l, k[:m*row], v[:m*row], m); err != nil {
				return err
			}
		}
		if err := c.Commit(m); err != nil {
			return err
		}
	}
	return nil
}

// ---- CUDA

func benchAttnCUDA(o benchAttnOptions, errw io.Writer) (benchReport, error) {
	e, err := engine.Open(0)
	if err != nil {
		return benchReport{}, err
	}
	defer e.Close()
	info := e.Info()
	rep := benchReport{Device: "cuda", DeviceName: info.Name, Heads: o.heads, KVHeads: o.kvHeads, HeadDim: o.headDim,
		Method: "device-to-device copy, bytes read + written per second"}
	cp, err := e.CopyBandwidth(o.memBytes, 20)
	if err != nil {
		return rep, fmt.Errorf("copy bandwidth: %w", err)
	}
	rep.BandwidthGBps = cp / 1e9
	if rd, err := e.ReadBandwidth(o.memBytes, 20); err == nil {
		rep.ReadGBps = rd / 1e9
	} else {
		return rep, fmt.Errorf("read bandwidth: %w", err)
	}
	prog := newProgress(errw, len(o.ctx)*len(o.pairs), "bench attn (cuda)")
	defer prog.Finish()
	for _, n := range o.ctx {
		for _, p := range o.pairs {
			b, err := e.BenchDecode(kvcache.Config{KVHeads: o.kvHeads, HeadDimK: o.headDim, HeadDimV: o.headDim, Pair: p, Seed: 1}, n, o.heads, o.iters)
			if err != nil {
				return rep, err
			}
			sec := b.Time.Seconds()
			rep.Results = append(rep.Results, benchRow{Ctx: n, KV: p.String(), BytesPerCell: p.BytesPerToken(o.headDim, o.headDim, o.kvHeads),
				KVBytes: b.KVBytes, Seconds: sec, GBps: float64(b.KVBytes) / sec / 1e9})
			prog.Add(1)
		}
	}
	fillRatios(&rep)
	return rep, nil
}
