package limits

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRanges(t *testing.T) {
	if err := Int("window", 1_000_000_000, 0, 4096, "the context"); err == nil ||
		err.Error() != "window 1000000000: out of range, want 0 to 4096 (the context)" || !errors.Is(err, ErrRange) {
		t.Errorf("window: %v", err)
	}
	if err := Ctx("--ctx", 10_000_000_000); err == nil || !strings.Contains(err.Error(), "--ctx") {
		t.Errorf("ctx: %v", err)
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), -1, 3} {
		if Float("temperature", v, 0, 2, "") == nil {
			t.Errorf("temperature %g taken", v)
		}
	}
	if Sampling(0.8, 0.95, 0.05, 40) != nil || Sampling(0.8, 1.5, 0, 0) == nil || Sampling(0, 1, 0, MaxTopK+1) == nil {
		t.Error("sampling")
	}
	if Overlay("window", 8, "sinks", 9999, 100) == nil || Overlay("window", 100, "sinks", 0, 100) != nil {
		t.Error("overlay")
	}
}

func TestMemory(t *testing.T) {
	err := Memory("a KV cache", 64<<30, 23<<30, "MemAvailable")
	if err == nil || !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "64.0 GiB") || !strings.Contains(err.Error(), "23.0 GiB") {
		t.Errorf("memory: %v", err)
	}
	if Memory("x", Mul(1<<40, 1<<40), 1<<30, "") == nil || Memory("x", -1, 0, "") == nil || Memory("x", 1<<20, 0, "") != nil {
		t.Error("saturation")
	}
	if Add(math.MaxInt64, 1) != math.MaxInt64 || Mul(3, 4) != 12 {
		t.Error("arithmetic")
	}
}

func TestRegularFile(t *testing.T) {
	dir := t.TempDir()
	if err := RegularFile(dir); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("dir: %v", err)
	}
	f := filepath.Join(dir, "f")
	os.WriteFile(f, []byte("x"), 0o600)
	if err := RegularFile(f); err != nil {
		t.Error(err)
	}
}

func TestClip(t *testing.T) {
	s := strings.Repeat("é", 1000)
	c := Clip(s, 101)
	if len(c) > 140 || !strings.Contains(c, "bytes more") {
		t.Errorf("clip: %q", c)
	}
	if Clip("\xff\xfe", 10) != "�" {
		t.Errorf("invalid utf-8: %q", Clip("\xff\xfe", 10))
	}
}
