// Package calc is kvlab's planner: for a model shape, a GPU (or several) and a context length it
// computes the KV size ladder (bytes per token for each K/V format pair, the longest resident
// context for a budget, sessions per card, the total memory), the spill model (decode tokens/s
// when the KV tail lives in host memory) and the auto KV-tier policy of seed 000 (P1).
//
// The package is pure Go and imports only the standard library and native/kvq, so it compiles to
// js/wasm: the CLI (`kvlab plan`), the browser page (/plan) and the engine's boot-time policy
// run this same code and agree to the byte. Every byte count of a KV format comes from kvq.
//
// Units: sizes are bytes (int64) unless a name says otherwise. KiB, MiB and GiB are binary
// (1024-based); GB/s in bandwidth names is decimal (1e9 bytes per second), as hardware vendors
// state it.
package calc

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Binary size units in bytes.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// GB is one decimal gigabyte (1e9 bytes), the unit of vendor bandwidth figures.
const GB = 1e9

// Unbounded is the MaxResidentCtx of a cache whose size stops growing before it exhausts the
// budget (every layer is sliding-window or recurrent): no context length runs out of memory.
const Unbounded int64 = -1

// ToKiB converts bytes to KiB.
func ToKiB(b float64) float64 { return b / float64(KiB) }

// ToMiB converts bytes to MiB.
func ToMiB(b int64) float64 { return float64(b) / float64(MiB) }

// ToGiB converts bytes to GiB.
func ToGiB(b int64) float64 { return float64(b) / float64(GiB) }

// GiBBytes converts GiB (possibly fractional) to bytes, rounding to the nearest byte.
func GiBBytes(gib float64) int64 { return int64(math.Round(gib * float64(GiB))) }

// MiBBytes converts MiB (possibly fractional) to bytes, rounding to the nearest byte.
func MiBBytes(mib float64) int64 { return int64(math.Round(mib * float64(MiB))) }

// ceilDiv is ⌈a/b⌉ for a ≥ 0 and b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// FormatBytes writes a byte count in binary units: "512 B", "3.0 KiB", "1.2 MiB", "1.25 GiB".
func FormatBytes(b int64) string {
	switch {
	case b >= GiB:
		return FormatFixed(ToGiB(b), 2) + " GiB"
	case b >= MiB:
		return FormatFixed(ToMiB(b), 1) + " MiB"
	case b >= KiB:
		return FormatFixed(float64(b)/float64(KiB), 1) + " KiB"
	}
	return FormatFixed(float64(b), 0) + " B"
}

// ShortCount writes a token count with three significant digits and a k (10³) or M (10⁶)
// suffix: 43690 → "43.7k", 1553445 → "1.55M", 512 → "512". Unbounded is written "∞".
func ShortCount(n int64) string {
	if n == Unbounded {
		return "∞"
	}
	if n < 0 {
		return strconv.FormatInt(n, 10)
	}
	v, suffix := float64(n), ""
	switch {
	case n >= 999_500_000:
		v, suffix = v/1e9, "G"
	case n >= 999_500:
		v, suffix = v/1e6, "M"
	case n >= 1000:
		v, suffix = v/1e3, "k"
	default:
		return strconv.FormatInt(n, 10)
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + suffix
}

// FormatFixed writes x with the given number of decimals.
func FormatFixed(x float64, decimals int) string {
	return strconv.FormatFloat(x, 'f', decimals, 64)
}

// FormatSig writes x with up to sig significant digits, without an exponent for ordinary
// magnitudes and without trailing zeros (102 → "102", 43.6907 → "43.7" with sig 3).
func FormatSig(x float64, sig int) string {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	mag := int(math.Floor(math.Log10(math.Abs(x))))
	dec := sig - 1 - mag
	if dec < 0 {
		p := math.Pow(10, float64(-dec))
		return strconv.FormatFloat(math.Round(x/p)*p, 'f', 0, 64)
	}
	s := strconv.FormatFloat(x, 'f', dec, 64)
	if dec > 0 {
		for s[len(s)-1] == '0' {
			s = s[:len(s)-1]
		}
		if s[len(s)-1] == '.' {
			s = s[:len(s)-1]
		}
	}
	return s
}

// ParseTokens parses a token count: "32768", or with a binary suffix as context sizes are
// quoted, "32k" = 32768 and "1M" = 1048576. It rejects counts beyond ±MaxContext.
func ParseTokens(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult, t = 1<<10, t[:n-1]
		case 'm', 'M':
			mult, t = 1<<20, t[:n-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a token count (use 32768, 32k or 1M)", ErrBadInput, s)
	}
	if n > MaxContext/mult || n < -MaxContext/mult {
		return 0, fmt.Errorf("%w: %q tokens is beyond the planner's limit of %d", ErrBadInput, s, MaxContext)
	}
	return n * mult, nil
}
