package attn

import (
	"fmt"
	"testing"
)

// TestReadSum checks readSum against readSumGo: the same sum of a buffer's whole 64-byte lines,
// the bytes past the last whole line left out, whatever the length.
func TestReadSum(t *testing.T) {
	buf := make([]byte, 8192+200)
	for i := range buf {
		buf[i] = byte(i*7 + i>>8)
	}
	for _, n := range []int{0, 1, 63, 64, 65, 127, 128, 129, 192, 4096, 4160, 8192 + 200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if got, want := readSum(buf[:n]), readSumGo(buf[:n]); got != want {
				t.Errorf("readSum of %d bytes %#x, readSumGo %#x", n, got, want)
			}
		})
	}
}
