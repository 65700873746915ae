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
// a slab) go to f16's and bf16's kernels in one call on Intel CPUs (oneRun), as a contiguous
// store's rows do.
func DotManyMultiRuns(c Codec, q []float32, n int, runs [][]byte, out []float32) {
	if n <= 0 {
		return
	}
	if rows, ok := oneRun(c, runs, len(out)/n); ok {
		dotManyMulti(c, q, n, rows, out)
		return
	}
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
// f16's and bf16's runs that lie one after another in memory go to the kernels in one call on
// Intel CPUs (oneRun), as for DotManyMultiRuns.
func AccumulateManyMultiRuns(c Codec, acc []float32, n int, w []float32, runs [][]byte) {
	if n <= 0 {
		return
	}
	if rows, ok := oneRun(c, runs, len(w)/n); ok {
		accumulateManyMulti(c, acc, n, w, rows)
		return
	}
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

// oneRun is the m rows of runs as one slice where they lie one after another in memory, each
// run but the last of a whole number of AccumulateTile rows, runs[0]'s capacity reaching the
// last of them (a paged cache's pages cut one after another from one slab), and c is f16 or
// bf16 on a CPU that reads them so (mergeRuns): DotManyMultiRuns and AccumulateManyMultiRuns
// then make one call of the codec's kernels over them, as over a contiguous store's rows, in
// place of a call a run. Their scores are each row's alone, and their sums add the rows in
// order with no rounding at a run's end (the accumulators are kept in float32 between tiles),
// so the results are the run-by-run calls' bit for bit. The run that may follow the m rows
// (rows only prefetched) is left out: the kernels' own prefetches run on into the memory past
// the rows, which is the next page's in the slab.
func oneRun(c Codec, runs [][]byte, m int) ([]byte, bool) {
	if !mergeRuns || len(runs) < 2 || len(runs[0]) == 0 {
		return nil, false
	}
	switch c.(type) {
	case *f16Codec, *bf16Codec:
	default:
		return nil, false
	}
	rb := c.RowBytes()
	first := runs[0][:cap(runs[0])]
	if len(first) < m*rb {
		return nil, false
	}
	base := 0 // rows of the runs before r
	for _, r := range runs {
		if base >= m {
			break
		}
		if len(r) == 0 || &first[base*rb] != &r[0] {
			return nil, false
		}
		k := len(r) / rb
		if base+k < m && k%AccumulateTile != 0 {
			return nil, false
		}
		base += k
	}
	if base < m {
		return nil, false
	}
	return first[:m*rb], true
}
