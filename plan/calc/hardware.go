package calc

import (
	"fmt"
	"sort"
	"strings"
)

// Hardware is one accelerator: its memory, how fast it reads that memory, and how fast it
// reads host memory over its link.
type Hardware struct {
	// Key is the name used on the command line and in the page ("rtx-3090").
	Key string `json:"key"`
	// Name is a display name.
	Name string `json:"name"`
	// VRAMBytes is the memory the accelerator can use, in bytes (nvidia-smi's total; for
	// unified memory the share the GPU may wire).
	VRAMBytes int64 `json:"vram_bytes"`
	// MemGBps is the device memory bandwidth in GB/s (1e9 bytes per second).
	MemGBps float64 `json:"mem_gbps"`
	// LinkGBps is the host-link bandwidth in GB/s: how fast a KV tail in host memory streams
	// to the device. For unified memory it equals MemGBps.
	LinkGBps float64 `json:"link_gbps"`
	// Unified reports that device and host share one memory (Apple silicon).
	Unified bool `json:"unified,omitempty"`
	// Source says where the figures come from.
	Source string `json:"source"`
}

// UnifiedGPUShare is the share of an Apple-silicon machine's memory that macOS lets the GPU
// wire by default (recommendedMaxWorkingSetSize is about 75 % on large-memory machines; the
// iogpu.wired_limit_mb sysctl raises it).
const UnifiedGPUShare = 0.75

// Host-link bandwidths measured in seed 000 (PCIe, pinned host memory to the card).
const (
	// LinkDesktopGBps is the ~6.5 GB/s measured on a desktop RTX 3090 (solidPC).
	LinkDesktopGBps = 6.5
	// LinkGen5GBps is the ~50 GB/s measured on the RTX 6000 Blackwell host (bs2, PCIe 5.0).
	LinkGen5GBps = 50
)

// HardwarePresets lists the known accelerators, in display order.
func HardwarePresets() []Hardware {
	unified := func(ram int64) int64 { return int64(float64(ram) * UnifiedGPUShare) }
	return []Hardware{
		{Key: "rtx-3090", Name: "RTX 3090 24 GB", VRAMBytes: 24576 * MiB, MemGBps: 936, LinkGBps: LinkDesktopGBps,
			Source: "nvidia-smi 24576 MiB; 936 GB/s GDDR6X; link 6.5 GB/s measured (pinned host memory to the card)"},
		{Key: "rtx-4090", Name: "RTX 4090 24 GB", VRAMBytes: 24564 * MiB, MemGBps: 1008, LinkGBps: 25,
			Source: "nvidia-smi 24564 MiB; 1008 GB/s GDDR6X; link ~25 GB/s practical PCIe 4.0 ×16"},
		{Key: "rtx-6000-blackwell", Name: "RTX PRO 6000 Blackwell 96 GB", VRAMBytes: 97887 * MiB, MemGBps: 1792, LinkGBps: LinkGen5GBps,
			Source: "nvidia-smi 97887 MiB; 1792 GB/s GDDR7; link ~50 GB/s measured (PCIe 5.0 host)"},
		{Key: "h100", Name: "H100 SXM 80 GB", VRAMBytes: 81559 * MiB, MemGBps: 3350, LinkGBps: LinkGen5GBps,
			Source: "nvidia-smi 81559 MiB; 3.35 TB/s HBM3; link ~50 GB/s PCIe 5.0"},
		{Key: "h200", Name: "H200 141 GB", VRAMBytes: 143771 * MiB, MemGBps: 4800, LinkGBps: LinkGen5GBps,
			Source: "nvidia-smi 143771 MiB; 4.8 TB/s HBM3e; link ~50 GB/s PCIe 5.0"},
		{Key: "apple-m4-max-128", Name: "Apple M4 Max 128 GB (unified)", VRAMBytes: unified(128 * GiB), MemGBps: 546, LinkGBps: 546, Unified: true,
			Source: "546 GB/s unified memory; the GPU may wire 75 % of 128 GiB by default"},
		{Key: "apple-m3-ultra-512", Name: "Apple M3 Ultra 512 GB (unified)", VRAMBytes: unified(512 * GiB), MemGBps: 819, LinkGBps: 819, Unified: true,
			Source: "819 GB/s unified memory; the GPU may wire 75 % of 512 GiB by default"},
	}
}

// LookupHardware returns the hardware preset with the given key (case-insensitive).
func LookupHardware(key string) (Hardware, error) {
	k := strings.ToLower(strings.TrimSpace(key))
	var names []string
	for _, h := range HardwarePresets() {
		if h.Key == k {
			return h, nil
		}
		names = append(names, h.Key)
	}
	sort.Strings(names)
	return Hardware{}, fmt.Errorf("%w: GPU %q (valid: %s)", ErrUnknownPreset, key, strings.Join(names, ", "))
}

// Validate reports the first value that keeps the hardware from being planned for.
func (h Hardware) Validate() error {
	switch {
	case h.VRAMBytes <= 0:
		return fmt.Errorf("%w: %s: memory of %d bytes, must be positive", ErrBadInput, h.label(), h.VRAMBytes)
	case h.MemGBps <= 0:
		return fmt.Errorf("%w: %s: memory bandwidth %g GB/s, must be positive", ErrBadInput, h.label(), h.MemGBps)
	case h.LinkGBps <= 0:
		return fmt.Errorf("%w: %s: host-link bandwidth %g GB/s, must be positive", ErrBadInput, h.label(), h.LinkGBps)
	}
	return nil
}

func (h Hardware) label() string {
	if h.Name != "" {
		return h.Name
	}
	return "GPU"
}
