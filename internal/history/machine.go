package history

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/kvlab/kvlab/internal/isa"
	"golang.org/x/sys/cpu"
)

// Machine describes where a run ran, for reading its speed numbers later.
type Machine struct {
	OS       string   `json:"os"`
	Arch     string   `json:"arch"`
	CPU      string   `json:"cpu"`
	CPUs     int      `json:"cpus"`
	Features []string `json:"features,omitempty"`
	Hostname string   `json:"hostname"`
	Go       string   `json:"go"`
	// Version is the kvlab build (module version or VCS revision when known).
	Version string `json:"version"`
}

// ThisMachine describes the running machine; version is the kvlab build's version string.
func ThisMachine(version string) Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Go: runtime.Version(),
		CPU: cpuModel(), Version: version}
	m.Hostname, _ = os.Hostname()
	if runtime.GOARCH == "amd64" {
		for _, f := range []struct {
			name string
			ok   bool
		}{{"avx2", cpu.X86.HasAVX2}, {"fma", cpu.X86.HasFMA}, {"f16c", cpu.X86.HasF16C},
			{"avxvnni", cpu.X86.HasAVXVNNI}, {"avx512f", cpu.X86.HasAVX512F},
			{"avx512bw", cpu.X86.HasAVX512BW}, {"avx512vnni", cpu.X86.HasAVX512VNNI},
			{"avx512vbmi", cpu.X86.HasAVX512VBMI}, {"avx512bitalg", cpu.X86.HasAVX512BITALG},
			{"gfni", cpu.X86.HasAVX512GFNI}, {"avx512bf16", cpu.X86.HasAVX512BF16}} {
			if f.ok {
				m.Features = append(m.Features, f.name)
			}
		}
		// The switches that make the kernels skip features the CPU has: a run made with them
		// measured other kernels than the features alone say.
		m.Features = append(m.Features, isa.Set()...)
	}
	if m.Version == "" || m.Version == "dev" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					m.Version = "dev+" + s.Value
				}
			}
		}
	}
	return m
}

// cpuModel is the CPU's model name where the system says it (Linux), else "".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// HashFile returns the SHA-256 (hex) and size of the file at path, reading it once; ctx
// cancels between reads. For a model folder (a Hugging Face one) it hashes the folder's
// regular files in name order, each as its name, a NUL and its bytes, and the size is their
// total.
func HashFile(ctx context.Context, path string) (string, int64, error) {
	h := sha256.New()
	st, err := os.Stat(path)
	if err != nil {
		return "", 0, err
	}
	if !st.IsDir() {
		n, err := hashInto(ctx, h, path)
		if err != nil {
			return "", n, err
		}
		return hex.EncodeToString(h.Sum(nil)), n, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return "", 0, err
	}
	var total int64
	for _, e := range ents { // ReadDir sorts by name
		p := filepath.Join(path, e.Name())
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		h.Write([]byte(e.Name()))
		h.Write([]byte{0})
		n, err := hashInto(ctx, h, p)
		total += n
		if err != nil {
			return "", total, err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), total, nil
}

// hashInto writes the bytes of the file at path to h.
func hashInto(ctx context.Context, h io.Writer, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		k, err := f.Read(buf)
		h.Write(buf[:k])
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("history: hash %s: %w", path, err)
		}
	}
}
