//go:build !linux

package server

// hostMemory has no portable way to read free memory off Linux: it reports ErrMemUnknown, and
// the KV policy stays f16 and says why.
func hostMemory() (MemInfo, error) { return MemInfo{}, ErrMemUnknown }

// cpuName is not read off Linux.
func cpuName() string { return "" }
