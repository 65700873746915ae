// Package limits is the one validation layer of kvlab's numeric inputs, shared by the CLI, the
// JSON API and the websockets: every count a request or a flag gives (context, window, sinks,
// positions, arms, threads, sampling parameters) is checked against a range that the model and
// the memory allow before anything is allocated, and the memory a cache will take is checked
// against the budget before the cache is made. Errors name the field and its range, in one
// line, so a handler answers 400 with them and the CLI prints them as they are.
//
// The package depends on nothing of kvlab's, so that every layer can call it.
package limits

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Hard ceilings, whatever the machine: past them no model or memory makes sense, and below
// them the arithmetic of sizes cannot overflow an int64.
const (
	// MaxCtx is the longest context (cells per sequence) anything accepts: 2^24 = 16 Mi.
	MaxCtx = 1 << 24
	// MaxThreads is the most forward-pass goroutines.
	MaxThreads = 1024
	// MaxTopK is the largest top_k (larger than any vocabulary).
	MaxTopK = 1 << 20
	// MaxTemperature is the largest sampling temperature.
	MaxTemperature = 2.0
	// MaxKGain is the largest q2k K gain.
	MaxKGain = 16.0
	// MaxErrorBytes bounds an error message that quotes input or file contents.
	MaxErrorBytes = 1024
)

// Error is a value out of its range. Field is the name the caller knows it by (a JSON field,
// or a flag with its dashes).
type Error struct {
	Field string
	Value string
	// Min and Max bound the value; Why says where the bound comes from ("the context", "the
	// vocabulary"), empty for a fixed range.
	Min, Max string
	Why      string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s %s: out of range, want %s to %s", e.Field, Clip(e.Value, 64), e.Min, e.Max)
	if e.Why != "" {
		msg += " (" + e.Why + ")"
	}
	return msg
}

// ErrRange matches every *Error with errors.Is.
var ErrRange = errors.New("limits: out of range")

func (e *Error) Is(target error) bool { return target == ErrRange }

// Int checks lo ≤ v ≤ hi.
func Int(field string, v, lo, hi int64, why string) error {
	if v < lo || v > hi {
		return &Error{Field: field, Value: fmt.Sprint(v), Min: fmt.Sprint(lo), Max: fmt.Sprint(hi), Why: why}
	}
	return nil
}

// Float checks that v is finite and lo ≤ v ≤ hi.
func Float(field string, v, lo, hi float64, why string) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		return &Error{Field: field, Value: fmt.Sprint(v), Min: fmt.Sprint(lo), Max: fmt.Sprint(hi), Why: why}
	}
	return nil
}

// Ctx checks a context length in cells: 1 to MaxCtx (0 is "the default" to callers that have
// one and must be resolved before).
func Ctx(field string, v int) error { return Int(field, int64(v), 1, MaxCtx, "") }

// Threads checks a thread count: 0 (every CPU) to MaxThreads.
func Threads(field string, v int) error { return Int(field, int64(v), 0, MaxThreads, "") }

// Overlay checks the FP16 window and sinks of a cache of ctx cells: each 0 to ctx. (A window
// as long as the cache already keeps every cell exact, so a longer one buys nothing but
// memory.)
func Overlay(windowField string, window int, sinksField string, sinks int, ctx int) error {
	if err := Int(windowField, int64(window), 0, int64(ctx), "the context"); err != nil {
		return err
	}
	return Int(sinksField, int64(sinks), 0, int64(ctx), "the context")
}

// Sampling checks the sampling parameters the CLI and the APIs take.
func Sampling(temp, topP, minP float64, topK int) error {
	if err := Float("temperature", temp, 0, MaxTemperature, ""); err != nil {
		return err
	}
	if err := Float("top_p", topP, 0, 1, ""); err != nil {
		return err
	}
	if err := Float("min_p", minP, 0, 1, ""); err != nil {
		return err
	}
	return Int("top_k", int64(topK), 0, MaxTopK, "")
}

// MemoryError is a cache (or another allocation) larger than the memory budget.
type MemoryError struct {
	What        string
	Need, Avail int64
	Source      string
}

func (e *MemoryError) Error() string {
	src := ""
	if e.Source != "" {
		src = " (" + e.Source + ")"
	}
	return fmt.Sprintf("%s needs %s, more than the %s of memory available%s: lower the context or pick a smaller KV format", e.What, Bytes(e.Need), Bytes(e.Avail), src)
}

// ErrMemory matches every *MemoryError with errors.Is.
var ErrMemory = errors.New("limits: not enough memory")

func (e *MemoryError) Is(target error) bool { return target == ErrMemory }

// Memory checks that need bytes fit in avail. A negative need (an overflowed sum) never fits;
// avail ≤ 0 means unknown, and only the hard ceilings apply.
func Memory(what string, need, avail int64, source string) error {
	if need < 0 || (avail > 0 && need > avail) {
		if need < 0 {
			need = math.MaxInt64
		}
		return &MemoryError{What: what, Need: need, Avail: avail, Source: source}
	}
	return nil
}

// Mul multiplies non-negative sizes, saturating at MaxInt64 instead of wrapping.
func Mul(xs ...int64) int64 {
	out := int64(1)
	for _, x := range xs {
		if x < 0 {
			return -1
		}
		if x != 0 && out > math.MaxInt64/x {
			return math.MaxInt64
		}
		out *= x
	}
	return out
}

// Add sums non-negative sizes, saturating at MaxInt64.
func Add(xs ...int64) int64 {
	out := int64(0)
	for _, x := range xs {
		if x < 0 {
			return -1
		}
		if out > math.MaxInt64-x {
			return math.MaxInt64
		}
		out += x
	}
	return out
}

// Bytes writes a byte count in binary units.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	x, i := float64(n), 0
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	for x >= unit && i < len(units)-1 {
		x /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", x, units[i])
}

// RegularFile checks that path names a regular file (not a FIFO, a device or a directory,
// which would block or mislead a reader), following symlinks.
func RegularFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		kind := "not a regular file"
		switch m := st.Mode(); {
		case m.IsDir():
			kind = "a directory"
		case m&fs.ModeNamedPipe != 0:
			kind = "a named pipe (FIFO)"
		case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
			kind = "a device"
		case m&fs.ModeSocket != 0:
			kind = "a socket"
		}
		return fmt.Errorf("%s is %s, not a model file", path, kind)
	}
	return nil
}

// ModelPath checks that path names a model kvlab reads: a regular file (RegularFile) or a
// Hugging Face model folder (a directory holding a regular config.json; native/hf reads it).
func ModelPath(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		if cst, err := os.Stat(filepath.Join(path, "config.json")); err == nil && cst.Mode().IsRegular() {
			return nil
		}
		return fmt.Errorf("%s is a directory without a config.json, not a model file or Hugging Face model folder", path)
	}
	return RegularFile(path)
}

// Clip bounds a string quoted in a message to n bytes (on a rune boundary), marking the cut,
// and replaces bytes that are not UTF-8 text.
func Clip(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "�")
	}
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes more)", len(s)-cut)
}
