//go:build darwin

package gguf

// adviseHuge does nothing on macOS, which has no transparent huge pages to ask for.
func adviseHuge(m []byte) {}
