//go:build !amd64 || purego

package kvq

// f32ToF16Row writes the binary16 bits of src into dst (2·len(src) bytes, little-endian).
func f32ToF16Row(dst []byte, src []float32) { f32ToF16Go(dst, src) }

// f16ToF32Row writes the float32 of every binary16 of src (2·len(dst) bytes) into dst.
func f16ToF32Row(dst []float32, src []byte) { f16ToF32Go(dst, src) }
