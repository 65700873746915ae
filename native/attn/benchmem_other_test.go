//go:build !linux

package attn

// benchRowMemory is the bench stores' row memory (huge pages are advised on Linux only).
func benchRowMemory(n int) []byte { return make([]byte, n) }
