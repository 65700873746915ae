//go:build !linux

package hugemem

// Bytes is make([]byte, n): transparent huge pages are advised on Linux only.
func Bytes(n int) []byte { return make([]byte, n) }

// Advise does nothing: transparent huge pages are advised on Linux only.
func Advise([]byte) {}
