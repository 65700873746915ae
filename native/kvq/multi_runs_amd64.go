//go:build amd64 && !purego

package kvq

import "unsafe"

// accRuns is AccumulateManyMultiRuns's kernel path: f16 rows of a multiple of 32 values on the
// AVX-512 or the AVX2 f16 kernels, four accumulators a call (n a multiple of 4), runs of at
// most AccumulateTile rows. Each run goes to multiAccF16AVX512PF, its prefetches aimed at the
// next run (into L1) and the run three on (into L2) where multiAccF16AVX512 aims them at the
// 16 KiB and 48 KiB that follow the run in memory (in a paged cache another head's rows, which
// cost a read from DRAM each and crowd L1), or to multiAccF16AVX2TPF (the next run and the one
// after, as multiAccF16AVX2T the next two tiles). The sums are those kernels', bit for bit. It
// reports false, doing nothing, where it does not apply. Zen 4, kvcache TestPagedDecodeSpeed
// (one thread, 32768 cells, 32/8 heads of 128, thread CPU, min of 3 runs of 12 rounds), paged
// f16 decode a page a call with Prefetch -> through here: 12.4 -> 7.7 ms (contiguous 5.3; the
// values alone 11.5 -> 3.2 ms against 2.4), KVLAB_NO_AVX512=1 18.2 -> 9.6 ms (contiguous 5.7).
// Intel not measured: the prefetches are the same instructions at other addresses.
func accRuns(c Codec, acc []float32, n int, w []float32, runs [][]byte) bool {
	f, ok := c.(*f16Codec)
	avx2 := multiF16 == f16AVX2
	if !ok || (multiF16 != avx512Kernels[0] && !avx2) || f.short() || f.d%32 != 0 || n%4 != 0 {
		return false
	}
	d, rb := f.d, f.rb
	for _, r := range runs {
		if len(r) > AccumulateTile*rb {
			return false
		}
	}
	acc = acc[:n*d]
	base := 0
	for i, r := range runs {
		m := len(r) / rb
		if m == 0 {
			continue
		}
		// Byte offsets from this run to the next and to the third on (the last run's own
		// rows where there are none: prefetching them again costs nothing).
		at := func(j int) int {
			if j >= len(runs) || len(runs[j]) == 0 {
				return 0
			}
			return int(uintptr(unsafe.Pointer(&runs[j][0])) - uintptr(unsafe.Pointer(&r[0])))
		}
		ws := w[base*n : (base+m)*n]
		if avx2 {
			pf1, pf2 := at(i+1), at(min(i+2, len(runs)-1))
			for h := 0; h < n; h += 4 {
				multiAccF16AVX2TPF(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf1, pf2)
			}
		} else {
			pf1, pf3 := at(i+1), at(min(i+3, len(runs)-1))
			for h := 0; h < n; h += 4 {
				multiAccF16AVX512PF(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf1, pf3)
			}
		}
		base += m
	}
	return true
}
