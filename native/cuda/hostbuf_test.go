package cuda

import (
	"bytes"
	"errors"
	"testing"
)

func TestHostBufferCopiesAndLifetime(t *testing.T) {
	c, f := openFake(t)
	h, err := c.AllocHost(4096)
	if err != nil {
		t.Fatal(err)
	}
	if h.Size() != 4096 || len(h.Bytes()) != 4096 {
		t.Fatalf("size %d, bytes %d", h.Size(), len(h.Bytes()))
	}
	for i := range h.Bytes() {
		h.Bytes()[i] = byte(i * 7)
	}
	d, err := c.Alloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CopyFromHostAsync(h, 100, 24, 1000, nil); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 1000)
	if err := d.ReadAt(got, 24); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, h.Bytes()[100:1100]) {
		t.Fatal("host-to-device copy differs")
	}
	if err := h.CopyFromDeviceAsync(d, 24, 3000, 1000, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Bytes()[3000:4000], got) {
		t.Fatal("device-to-host copy differs")
	}
	// Ranges are checked before the driver.
	if err := d.CopyFromHostAsync(h, 4000, 0, 200, nil); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("copy past the host buffer: %v", err)
	}
	if err := h.CopyFromDeviceAsync(d, 0, -1, 10, nil); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("copy to a negative offset: %v", err)
	}
	if _, err := c.AllocHost(0); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("empty host alloc: %v", err)
	}
	if err := h.Free(); err != nil {
		t.Fatal(err)
	}
	if err := h.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	if h.Bytes() != nil {
		t.Error("Bytes after Free")
	}
	if err := d.CopyFromHostAsync(h, 0, 0, 1, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("copy from a freed host buffer: %v", err)
	}
	// Close frees what is left.
	if _, err := c.AllocHost(100); err != nil {
		t.Fatal(err)
	}
	if f.LiveHostAllocs() != 1 {
		t.Fatalf("%d live host allocations, want 1", f.LiveHostAllocs())
	}
	c.Close()
	if f.LiveHostAllocs() != 0 {
		t.Errorf("%d host allocations left after Close", f.LiveHostAllocs())
	}
}
