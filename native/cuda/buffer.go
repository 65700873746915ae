package cuda

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/kvlab/kvlab/native/cuda/internal/cu"
)

// Buffer is device memory of a fixed size, allocated with cuMemAlloc_v2 (aligned to at least
// 256 bytes). Copies check their ranges before calling the driver. Free (or the context's
// Close) releases it; every later use returns ErrClosed.
type Buffer struct {
	c     *Context
	ptr   cu.DevicePtr
	size  int64
	freed atomic.Bool
}

// Alloc allocates bytes of device memory (bytes > 0). Running out matches ErrOutOfMemory.
func (c *Context) Alloc(bytes int64) (*Buffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuda: alloc of %d bytes: %w", bytes, ErrInvalidValue)
	}
	b := &Buffer{c: c, size: bytes}
	err := c.do(func() error {
		return c.x.check("cuMemAlloc_v2", c.drv.MemAlloc(&b.ptr, uint64(bytes)))
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: alloc of %d bytes: %w", bytes, err)
	}
	if err := c.track(func() { c.buffers[b] = struct{}{} }); err != nil {
		return nil, err
	}
	return b, nil
}

// Size is the buffer's length in bytes.
func (b *Buffer) Size() int64 { return b.size }

// Addr is the device address of byte off of the buffer, for kernel arguments built by hand.
func (b *Buffer) Addr(off int64) uint64 { return uint64(b.ptr) + uint64(off) }

func (b *Buffer) markFreed() { b.freed.Store(true) }

// Free releases the buffer. It is idempotent.
func (b *Buffer) Free() error {
	if b.freed.Swap(true) {
		return nil
	}
	b.c.untrack(func() { delete(b.c.buffers, b) })
	return b.c.do(func() error { return b.c.x.check("cuMemFree_v2", b.c.drv.MemFree(b.ptr)) })
}

// span checks that [off, off+n) lies in the buffer and that it is alive.
func (b *Buffer) span(op string, off, n int64) error {
	if b == nil || b.freed.Load() {
		return fmt.Errorf("cuda: %s: %w", op, ErrClosed)
	}
	if off < 0 || n < 0 || off > b.size || n > b.size-off {
		return fmt.Errorf("cuda: %s of %d bytes at offset %d: outside the %d-byte buffer: %w", op, n, off, b.size, ErrInvalidValue)
	}
	return nil
}

// WriteAt copies src to the buffer at byte offset off (synchronous, cuMemcpyHtoD_v2).
func (b *Buffer) WriteAt(src []byte, off int64) error {
	if err := b.span("write", off, int64(len(src))); err != nil || len(src) == 0 {
		return err
	}
	return b.c.do(func() error {
		var pin runtime.Pinner
		pin.Pin(&src[0])
		defer pin.Unpin()
		return b.c.x.check("cuMemcpyHtoD_v2", b.c.drv.MemcpyHtoD(b.ptr+cu.DevicePtr(off), unsafe.Pointer(&src[0]), uint64(len(src))))
	})
}

// ReadAt copies len(dst) bytes from byte offset off of the buffer (synchronous; it waits for
// the work already queued on the legacy default stream and on blocking streams).
func (b *Buffer) ReadAt(dst []byte, off int64) error {
	if err := b.span("read", off, int64(len(dst))); err != nil || len(dst) == 0 {
		return err
	}
	return b.c.do(func() error {
		var pin runtime.Pinner
		pin.Pin(&dst[0])
		defer pin.Unpin()
		return b.c.x.check("cuMemcpyDtoH_v2", b.c.drv.MemcpyDtoH(unsafe.Pointer(&dst[0]), b.ptr+cu.DevicePtr(off), uint64(len(dst))))
	})
}

// Write copies src to the start of the buffer.
func (b *Buffer) Write(src []byte) error { return b.WriteAt(src, 0) }

// Read fills dst from the start of the buffer.
func (b *Buffer) Read(dst []byte) error { return b.ReadAt(dst, 0) }

// CopyFrom copies n bytes from src at srcOff to b at off on the device (cuMemcpyDtoD_v2).
func (b *Buffer) CopyFrom(src *Buffer, srcOff, off, n int64) error {
	if err := src.span("copy source", srcOff, n); err != nil {
		return err
	}
	if err := b.span("copy destination", off, n); err != nil || n == 0 {
		return err
	}
	return b.c.do(func() error {
		return b.c.x.check("cuMemcpyDtoD_v2", b.c.drv.MemcpyDtoD(b.ptr+cu.DevicePtr(off), src.ptr+cu.DevicePtr(srcOff), uint64(n)))
	})
}

// CopyFromAsync queues the same copy on stream s (nil is the default stream).
func (b *Buffer) CopyFromAsync(src *Buffer, srcOff, off, n int64, s *Stream) error {
	if err := src.span("copy source", srcOff, n); err != nil {
		return err
	}
	if err := b.span("copy destination", off, n); err != nil || n == 0 {
		return err
	}
	return b.c.do(func() error {
		return b.c.x.check("cuMemcpyDtoDAsync_v2", b.c.drv.MemcpyDtoDAsync(b.ptr+cu.DevicePtr(off), src.ptr+cu.DevicePtr(srcOff), uint64(n), s.handle()))
	})
}

// Memset sets every byte of the buffer to v (cuMemsetD8_v2).
func (b *Buffer) Memset(v byte) error {
	if err := b.span("memset", 0, b.size); err != nil {
		return err
	}
	return b.c.do(func() error { return b.c.x.check("cuMemsetD8_v2", b.c.drv.MemsetD8(b.ptr, v, uint64(b.size))) })
}

// Number is an element type that Bytes views as raw bytes.
type Number interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// Bytes views s as its bytes in memory (little-endian on every platform kvlab builds for),
// without copying.
func Bytes[T Number](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}
