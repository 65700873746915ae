package attn

import "time"

// ReadBandwidth reads buf once, as fast as one thread can (readSum: software prefetches ahead
// of the loads, as the decode kernels stream their rows), and returns the bytes per second: the
// memory read bandwidth a bandwidth-bound decode reaches, when buf is much larger than the
// caches (a few hundred MiB). The caller touches buf's pages first.
func ReadBandwidth(buf []byte) float64 {
	if len(buf) == 0 {
		return 0
	}
	t0 := time.Now()
	sink = readSum(buf)
	return float64(len(buf)) / time.Since(t0).Seconds()
}

// sink keeps readSum's result alive.
var sink uint64

// readSumGo is readSum without assembly: eight-way uint64 sums of buf's whole 64-byte lines.
func readSumGo(buf []byte) uint64 {
	var s [8]uint64
	for i := 0; i+64 <= len(buf); i += 64 {
		l := (*[64]byte)(buf[i:])
		for k := range s {
			s[k] += uint64(l[8*k]) | uint64(l[8*k+1])<<8 | uint64(l[8*k+2])<<16 | uint64(l[8*k+3])<<24 |
				uint64(l[8*k+4])<<32 | uint64(l[8*k+5])<<40 | uint64(l[8*k+6])<<48 | uint64(l[8*k+7])<<56
		}
	}
	return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7]
}
