//go:build !amd64 || purego

package kvq

// Prefetch asks the memory system for the lines of b ahead of a read of them; here it does
// nothing (prefetch_amd64.go).
func Prefetch(b []byte) {}
