//go:build !amd64 || purego

package kvq

// f32ToF16Row writes the binary16 bits of src into dst (2·len(src) bytes, little-endian).
func f32ToF16Row(dst []byte, src []float32) { f32ToF16Go(dst, src) }
