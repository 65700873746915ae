package kvq

// DotManyMultiRuns is c's DotManyMulti over the rows of several runs (the pages of a paged
// cache): out holds n scores a row, runs[0]'s rows first, then runs[1]'s, and so on; the runs
// hold whole rows, len(out)/n of them in all, or more: the rows past those, which the runs
// that follow the last one scored may hold (the pages a later call reads), are only
// prefetched, as the rows of a run after the one being scored. Every score is the one DotManyMulti (DotMany per
// query, for a codec without MultiQuery) gives over the row's run alone. Where c's scores
// kernels round each group of four queries to integer digits first (the VNNI kernels,
// multi_vnni_amd64.go), it rounds them once for all the runs instead of once a run: ~100 ns a
// group of 128-value queries, against a 64-row page's ~0.3 µs of turbo2 rows. Each run's rows
// are prefetched (Prefetch) as the one before it starts: the kernels prefetch a fixed distance
// ahead of the rows they read, which past a run's end is not the next run, and separate runs
// of a few KiB each read cold otherwise (on an AMD EPYC, 16 KiB runs 256 KiB apart read at
// about a third of a contiguous read's rate). Kernels that take the runs (q8_0 at one digit
// and f16 on Zen 4, f16, bf16 and fp8 on the AVX2 kernels, q8_0's AVX2 high-byte kernel: runsPF
// and scoresRuns, multi_runs_amd64.go) aim their own prefetches at the next run instead.
//
// Runs that lie one after another in memory (a paged cache's pages cut one after another from
// a slab) go to the codec's kernels in one call a stretch of them on Intel CPUs (runStretches),
// as a contiguous store's rows do.
func DotManyMultiRuns(c Codec, q []float32, n int, runs [][]byte, out []float32) {
	if n <= 0 {
		return
	}
	runStretches(c, runs, len(out)/n, false,
		func(apart [][]byte, from, to int) { dotRuns(c, q, n, apart, out[from*n:to*n]) },
		func(rows []byte, from, to int) { dotManyMulti(c, q, n, rows, out[from*n:to*n]) })
}

// dotRuns is DotManyMultiRuns taking each run apart: the runs kernels (vnniRuns, scoresRuns) or
// a call of the codec's kernels a run.
func dotRuns(c Codec, q []float32, n int, runs [][]byte, out []float32) {
	if vnniRuns(c, q, n, runs, out) || scoresRuns(c, q, n, runs, out) {
		return
	}
	rb := c.RowBytes()
	far := scoresRunsFar(c) // a run further on prefetched too (0: none)
	base, total := 0, len(out)/n
	for i, rows := range runs {
		m := min(len(rows)/rb, total-base)
		if m <= 0 {
			continue
		}
		if i+1 < len(runs) {
			Prefetch(runs[i+1]) // the kernels' prefetches run past this run's end
		}
		if j := i + far; far > 0 && j < len(runs) {
			Prefetch(runs[j])
		}
		o := out[base*n : (base+m)*n]
		dotManyMulti(c, q, n, rows[:m*rb], o)
		base += m
	}
}

// AccumulateManyMultiRuns is c's AccumulateManyMulti over the rows of several runs (the pages
// of a paged cache): w holds n weights a row, runs[0]'s rows first, then runs[1]'s, and so
// on, len(w)/n rows in all (rows past those, as in DotManyMultiRuns, are only prefetched), and
// acc n accumulators of Dim values. Every accumulator gets the
// sums that AccumulateManyMulti over each run in turn adds, bit for bit. Where a kernel takes
// the runs (f16 on the AVX-512 or AVX2 kernels, q8_0 on Zen 4's integer kernels or the AVX2
// int16 kernel, fp8 and bf16 on the AVX2 kernels, four accumulators a call: accRuns) its prefetches
// follow the runs instead of running past each run's end; otherwise each run's rows are
// prefetched (Prefetch) as the one before it starts.
//
// Runs that lie one after another in memory go to the kernels in one call a stretch of them on
// Intel CPUs (runStretches), as for DotManyMultiRuns.
func AccumulateManyMultiRuns(c Codec, acc []float32, n int, w []float32, runs [][]byte) {
	if n <= 0 {
		return
	}
	runStretches(c, runs, len(w)/n, true,
		func(apart [][]byte, from, to int) { accRunsApart(c, acc, n, w[from*n:to*n], apart) },
		func(rows []byte, from, to int) { accumulateManyMulti(c, acc, n, w[from*n:to*n], rows) })
}

// accRunsApart is AccumulateManyMultiRuns taking each run apart: the runs kernels (accRuns) or a
// call of the codec's kernels a run.
func accRunsApart(c Codec, acc []float32, n int, w []float32, runs [][]byte) {
	if accRuns(c, acc, n, w, runs) {
		return
	}
	rb := c.RowBytes()
	base, total := 0, len(w)/n
	for i, rows := range runs {
		m := min(len(rows)/rb, total-base)
		if m <= 0 {
			continue
		}
		if i+1 < len(runs) {
			Prefetch(runs[i+1])
		}
		accumulateManyMulti(c, acc, n, w[base*n:(base+m)*n], rows[:m*rb])
		base += m
	}
}

// mergeMin is the fewest rows of a stretch of runs one after another in memory (stretch) that
// DotManyMultiRuns and AccumulateManyMultiRuns take in one call of the codec's kernels
// (walkStretches); shorter stretches go to the runs kernels with the runs around them. A
// variable for the tests.
var mergeMin = 32 * AccumulateTile

// mergeAhead is how many bytes of the stretch that follows one taken in one call
// (walkStretches) are prefetched (Prefetch) as that call starts: the kernels' own prefetches
// run on past the stretch's rows into other memory (another store's rows).
const mergeAhead = 4 << 10

// prefetchStretch prefetches (Prefetch) the first mergeAhead bytes of the rows from runs[j] on
// (m rows of the call left, a run past them prefetched only): of the stretch from runs[j] where
// that is long enough to take in one call, and where two also those from its middle row on,
// where the two-stream scores kernels start their second stream; of runs[j] otherwise.
func prefetchStretch(runs [][]byte, j, rb, m int, two bool) {
	for ; j < len(runs) && len(runs[j]) == 0; j++ {
	}
	if j >= len(runs) {
		return
	}
	if m < mergeMin {
		Prefetch(runs[j][:min(len(runs[j]), mergeAhead)])
		return
	}
	rows, _ := stretch(runs, j, rb, m)
	Prefetch(rows[:min(len(rows), mergeAhead)])
	if k := len(rows) / rb; two && k >= mergeMin {
		mid := k / 2 &^ 15 * rb
		Prefetch(rows[mid:min(len(rows), mid+mergeAhead)])
	}
}

// stretch is the rows of runs[i] (not empty) and of the runs after it that lie one after
// another in memory, up to m rows, each run but the last of a whole number of AccumulateTile
// rows and runs[i]'s capacity reaching the last: a paged cache's pages cut one after another
// from a slab. j is the first run after them. The sums of the kernels that accumulate a tile at
// a time then add the same tiles in the same order as a call a run, and every kernel scores
// each row alone, so one call over the stretch gives the run-by-run results bit for bit.
func stretch(runs [][]byte, i, rb, m int) (rows []byte, j int) {
	first := runs[i][:cap(runs[i])]
	base, k := 0, 0 // rows of runs[i:j], of runs[j-1]
	for j = i; j < len(runs) && base < m; j++ {
		r := runs[j]
		if j > i && (len(r) == 0 || k%AccumulateTile != 0 || len(first) < base*rb+len(r) || &first[base*rb] != &r[0]) {
			break
		}
		k = len(r) / rb
		base += k
	}
	base = min(base, m)
	return first[:base*rb], j
}

// runStretches hands the first total rows of c's runs to DotManyMultiRuns's kernels
// (AccumulateManyMultiRuns's where acc): a stretch at a time (walkStretches) on a CPU that reads
// them so (mergeRuns: Intel) and a codec it takes so (mergeCodec), and for the sums not a
// rotated codec with channel offsets, which adds them a run at a time (rotCodec.accOffsets: one
// call over a stretch would add them once, rounding otherwise); all to apart in one call
// otherwise, as are calls of fewer than two runs. The runs hold at least total rows (the kernels
// size their work by out's or w's length and skip rows the runs lack). q2k has no runs.
func runStretches(c Codec, runs [][]byte, total int, acc bool, apart func(runs [][]byte, from, to int), whole func(rows []byte, from, to int)) {
	r, rot := c.(*rotCodec)
	if !mergeRuns || len(runs) < 2 || !mergeCodec(c) || acc && rot && r.muR != nil {
		apart(runs, 0, total)
		return
	}
	walkStretches(c.RowBytes(), runs, total, !acc, apart, whole)
}

// walkStretches takes the first total rows of runs (rows of rb bytes) a stretch at a time:
// each stretch of at least mergeMin rows, or the whole call, goes to whole as one contiguous
// slice (rows from..to), with the first mergeAhead bytes of the next run prefetched (for the
// scores when scores); the runs between such stretches go to apart together, with the run
// after them (apart's slice ends with the next stretch's first run, to prefetch), and all the
// runs in one call where no stretch is so long.
func walkStretches(rb int, runs [][]byte, total int, scores bool, apart func(runs [][]byte, from, to int), whole func(rows []byte, from, to int)) {
	base, from, fromBase := 0, 0, 0 // rows done; the first run not yet taken and its row
	for i := 0; i < len(runs) && base < total; {
		if len(runs[i]) == 0 {
			i++
			continue
		}
		rows, j := stretch(runs, i, rb, total-base)
		k := len(rows) / rb
		if k < mergeMin && k < total {
			base += k
			i = j
			continue
		}
		if fromBase < base {
			apart(runs[from:i+1], fromBase, base)
		}
		prefetchStretch(runs, j, rb, total-base-k, scores)
		whole(rows, base, base+k)
		base += k
		i, from, fromBase = j, j, base
	}
	if fromBase < base {
		apart(runs[from:], fromBase, base)
	}
}
