package server

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/cuda/engine"
)

// TestNewCUDAWithoutDriver: Device "cuda" without a driver fails New with the one-line
// ErrNoCUDA message; an unknown device is refused.
func TestNewCUDAWithoutDriver(t *testing.T) {
	t.Setenv("KVLAB_CUDA_DRIVER", filepath.Join(t.TempDir(), "libcuda.so.1"))
	if e, err := engine.Open(0); err == nil {
		e.Close()
		t.Skip("a CUDA driver was loaded earlier in this process")
	}
	_, err := New(Config{Logger: quiet, Device: DeviceCUDA})
	if !errors.Is(err, cuda.ErrNoCUDA) || !strings.HasPrefix(err.Error(), "no CUDA driver found: ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line starting %q", err, "no CUDA driver found: ")
	}
	if _, err := New(Config{Logger: quiet, Device: "tpu"}); err == nil || !strings.Contains(err.Error(), "want cpu or cuda") {
		t.Errorf("device tpu: %v", err)
	}
}

// rigidSlot is a forwarder that cannot truncate (as the device cache): it counts resets and
// frees.
type rigidSlot struct {
	n             int
	resets, frees *int
}

func (s *rigidSlot) Forward(tokens []int32, logits []float32) error { s.n += len(tokens); return nil }
func (s *rigidSlot) Len() int                                       { return s.n }
func (s *rigidSlot) Truncate(n int) error {
	if n == s.n {
		return nil
	}
	return errNoTruncate
}
func (s *rigidSlot) Reset() error { s.n = 0; *s.resets++; return nil }
func (s *rigidSlot) Bytes() int64 { return 1 }
func (s *rigidSlot) Free()        { *s.frees++ }

// TestPoolWithoutTruncate: with caches that cannot truncate, a prompt extending a cache's whole
// contents reuses it, any other prompt resets it; dropped caches are freed.
func TestPoolWithoutTruncate(t *testing.T) {
	var resets, frees int
	p := &cachePool{keep: 1, per: 1, newSlot: func() (forwarder, error) { return &rigidSlot{resets: &resets, frees: &frees}, nil }}
	s, err := p.get([]int32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	s.cache.Forward([]int32{1, 2, 3, 4}, nil)
	s.tokens = []int32{1, 2, 3, 4}
	p.put(s)
	// The next turn: the prompt extends the cache's contents.
	s, _ = p.get([]int32{1, 2, 3, 4, 5, 6})
	if s.cache.Len() != 4 || len(s.tokens) != 4 || resets != 0 {
		t.Fatalf("extending prompt: len %d, tokens %d, resets %d; want the whole cache reused", s.cache.Len(), len(s.tokens), resets)
	}
	p.put(s)
	// A prompt sharing only a prefix: the cache cannot drop the rest, so it is reset.
	s, _ = p.get([]int32{1, 2, 9})
	if s.cache.Len() != 0 || len(s.tokens) != 0 || resets != 1 {
		t.Fatalf("diverging prompt: len %d, tokens %d, resets %d; want a reset cache", s.cache.Len(), len(s.tokens), resets)
	}
	s.cache.Forward([]int32{1}, nil) // contents not matching tokens: dropped and freed on put
	p.put(s)
	if frees != 1 || len(p.idle) != 0 {
		t.Fatalf("frees %d, idle %d; want the mismatched cache freed", frees, len(p.idle))
	}
	s, _ = p.get([]int32{1})
	p.put(s)
	p.close()
	if frees != 2 {
		t.Fatalf("frees %d after close, want 2", frees)
	}
}
