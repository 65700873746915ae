//go:build !linux

package kvcache

// hugeBytes is make([]byte, n): transparent huge pages are advised on Linux only.
func hugeBytes(n int) []byte { return make([]byte, n) }

// adviseHuge does nothing: transparent huge pages are advised on Linux only.
func adviseHuge([]byte) {}
