package cuda

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/kvlab/kvlab/native/cuda/internal/cu"
)

// HostBuffer is page-locked ("pinned") host memory allocated with cuMemAllocHost_v2: memory
// the device's copy engines read and write directly, so asynchronous copies between it and a
// Buffer run at the host link's full rate and overlap the host. Free (or the context's Close)
// releases it; every later use returns ErrClosed, and Bytes must not be used after it.
type HostBuffer struct {
	c     *Context
	ptr   unsafe.Pointer
	size  int64
	freed atomic.Bool
}

// AllocHost allocates bytes of page-locked host memory (bytes > 0), zeroed.
func (c *Context) AllocHost(bytes int64) (*HostBuffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuda: host alloc of %d bytes: %w", bytes, ErrInvalidValue)
	}
	h := &HostBuffer{c: c, size: bytes}
	err := c.do(func() error {
		return c.x.check("cuMemAllocHost_v2", c.drv.MemAllocHost(&h.ptr, uint64(bytes)))
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: host alloc of %d bytes: %w", bytes, err)
	}
	clear(h.Bytes())
	if err := c.track(func() { c.hosts[h] = struct{}{} }); err != nil {
		return nil, err
	}
	return h, nil
}

// Size is the buffer's length in bytes.
func (h *HostBuffer) Size() int64 { return h.size }

// Bytes is the buffer's memory. Reading or writing it while an asynchronous copy from or to
// it is queued races with the copy: synchronize the copy's stream first.
func (h *HostBuffer) Bytes() []byte {
	if h == nil || h.freed.Load() {
		return nil
	}
	return unsafe.Slice((*byte)(h.ptr), h.size)
}

// Free releases the buffer. It is idempotent.
func (h *HostBuffer) Free() error {
	if h.freed.Swap(true) {
		return nil
	}
	h.c.untrack(func() { delete(h.c.hosts, h) })
	return h.c.do(func() error { return h.c.x.check("cuMemFreeHost", h.c.drv.MemFreeHost(h.ptr)) })
}

func (h *HostBuffer) span(op string, off, n int64) error {
	if h == nil || h.freed.Load() {
		return fmt.Errorf("cuda: %s: %w", op, ErrClosed)
	}
	if off < 0 || n < 0 || off > h.size || n > h.size-off {
		return fmt.Errorf("cuda: %s of %d bytes at offset %d: outside the %d-byte host buffer: %w", op, n, off, h.size, ErrInvalidValue)
	}
	return nil
}

// CopyFromHostAsync queues a copy of n bytes from src at srcOff to b at off on stream s
// (cuMemcpyHtoDAsync_v2; nil is the default stream).
func (b *Buffer) CopyFromHostAsync(src *HostBuffer, srcOff, off, n int64, s *Stream) error {
	if err := src.span("host copy source", srcOff, n); err != nil {
		return err
	}
	if err := b.span("copy destination", off, n); err != nil || n == 0 {
		return err
	}
	return b.c.do(func() error {
		return b.c.x.check("cuMemcpyHtoDAsync_v2", b.c.drv.MemcpyHtoDAsync(b.ptr+cu.DevicePtr(off), unsafe.Add(src.ptr, srcOff), uint64(n), s.handle()))
	})
}

// CopyFromDeviceAsync queues a copy of n bytes from src at srcOff to h at off on stream s
// (cuMemcpyDtoHAsync_v2; nil is the default stream).
func (h *HostBuffer) CopyFromDeviceAsync(src *Buffer, srcOff, off, n int64, s *Stream) error {
	if err := src.span("copy source", srcOff, n); err != nil {
		return err
	}
	if err := h.span("host copy destination", off, n); err != nil || n == 0 {
		return err
	}
	return h.c.do(func() error {
		return h.c.x.check("cuMemcpyDtoHAsync_v2", h.c.drv.MemcpyDtoHAsync(unsafe.Add(h.ptr, off), src.ptr+cu.DevicePtr(srcOff), uint64(n), s.handle()))
	})
}
