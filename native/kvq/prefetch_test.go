package kvq

import (
	"bytes"
	"testing"
)

// TestPrefetch: Prefetch of any length at any offset, up to the last byte of an allocation,
// neither faults nor changes a byte (it is a hint; what it fetches is not observable here).
func TestPrefetch(t *testing.T) {
	buf := make([]byte, 300)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := bytes.Clone(buf)
	for lo := 0; lo <= 70; lo++ {
		for hi := lo; hi <= len(buf); hi++ {
			Prefetch(buf[lo:hi])
		}
	}
	Prefetch(nil)
	if !bytes.Equal(buf, want) {
		t.Fatal("Prefetch changed its bytes")
	}
}
