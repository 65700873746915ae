package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/backend"
)

func TestStopper(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stops  []string
		pieces []string
		want   string
		hit    bool
	}{
		{"none", nil, []string{"a", "b"}, "ab", false},
		{"whole piece", []string{"<|im_end|>"}, []string{"Hi", "<|im_end|>", "x"}, "Hi", true},
		{"split across pieces", []string{"\nUser:"}, []string{"ok", "\nUs", "er:", " more"}, "ok", true},
		{"false start released", []string{"\nUser:"}, []string{"ok", "\nUs", "ually"}, "ok\nUsually", false},
		{"earliest of two", []string{"b", "a"}, []string{"xab"}, "x", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStopper(tc.stops)
			var out strings.Builder
			hit := false
			for _, p := range tc.pieces {
				o, h := s.add(p)
				out.WriteString(o)
				if h {
					hit = true
					break
				}
			}
			if !hit {
				out.WriteString(s.flush())
			}
			if out.String() != tc.want || hit != tc.hit {
				t.Errorf("got %q hit %v, want %q %v", out.String(), hit, tc.want, tc.hit)
			}
		})
	}
}

// rigidCache is a backend.Cache that cannot truncate (as the device cache): it counts resets and
// frees.
type rigidCache struct {
	n             int
	resets, frees *int
}

func (s *rigidCache) Forward(tokens []int32, logits []float32) error { s.n += len(tokens); return nil }
func (s *rigidCache) Len() int                                       { return s.n }
func (s *rigidCache) Cap() int                                       { return 1 << 20 }
func (s *rigidCache) Truncate(n int) error {
	if n == s.n {
		return nil
	}
	return errors.New("cannot truncate")
}
func (s *rigidCache) Reset() error { s.n = 0; *s.resets++; return nil }
func (s *rigidCache) Bytes() int64 { return 1 }
func (s *rigidCache) Free()        { *s.frees++ }

// TestPoolWithoutTruncate: with caches that cannot truncate, a prompt extending a cache's whole
// contents reuses it, any other prompt resets it; dropped caches are freed.
func TestPoolWithoutTruncate(t *testing.T) {
	var resets, frees int
	p := &Pool{keep: 1, per: 1, newCache: func() (backend.Cache, error) { return &rigidCache{resets: &resets, frees: &frees}, nil }}
	s, err := p.Get(context.Background(), []int32{1, 2, 3}, 8)
	if err != nil {
		t.Fatal(err)
	}
	s.cache.Forward([]int32{1, 2, 3, 4}, nil)
	s.tokens = []int32{1, 2, 3, 4}
	p.Put(s)
	// The next turn: the prompt extends the cache's contents.
	s, _ = p.Get(context.Background(), []int32{1, 2, 3, 4, 5, 6}, 8)
	if s.cache.Len() != 4 || len(s.tokens) != 4 || resets != 0 {
		t.Fatalf("extending prompt: len %d, tokens %d, resets %d; want the whole cache reused", s.cache.Len(), len(s.tokens), resets)
	}
	p.Put(s)
	// A prompt sharing only a prefix: the cache cannot drop the rest, so it is reset.
	s, _ = p.Get(context.Background(), []int32{1, 2, 9}, 8)
	if s.cache.Len() != 0 || len(s.tokens) != 0 || resets != 1 {
		t.Fatalf("diverging prompt: len %d, tokens %d, resets %d; want a reset cache", s.cache.Len(), len(s.tokens), resets)
	}
	s.cache.Forward([]int32{1}, nil) // contents not matching tokens: dropped and freed on put
	p.Put(s)
	if frees != 1 || len(p.idle) != 0 {
		t.Fatalf("frees %d, idle %d; want the mismatched cache freed", frees, len(p.idle))
	}
	s, _ = p.Get(context.Background(), []int32{1}, 8)
	p.Put(s)
	p.Close()
	if frees != 2 {
		t.Fatalf("frees %d after close, want 2", frees)
	}
}
