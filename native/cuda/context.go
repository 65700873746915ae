package cuda

import (
	"fmt"
	"sync"

	"github.com/kvlab/kvlab/native/cuda/internal/cu"
)

// Context is one device's primary context, owned by an executor goroutine locked to its OS
// thread (see the package doc). It tracks every Buffer, Stream, Event and Module made from it
// and releases them on Close. All methods are safe for concurrent use.
type Context struct {
	drv  *cu.Driver
	x    describer
	dev  cu.Device
	ctx  cu.Context
	info DeviceInfo
	exec *executor
	lim  limits

	mu      sync.Mutex
	buffers map[*Buffer]struct{}
	hosts   map[*HostBuffer]struct{}
	modules map[*Module]struct{}
	streams map[*Stream]struct{}
	events  map[*Event]struct{}
	closed  bool
}

// limits are the device limits Launch checks before calling the driver.
type limits struct {
	threadsPerBlock int
	block           [3]int
	grid            [3]int
	sharedDefault   int // bytes of dynamic shared memory a launch may use without opting in
	sharedOptin     int // bytes with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)
}

// Open returns the primary context of device ordinal (0 is the first GPU). Without a usable
// driver the error matches ErrNoCUDA; an ordinal past the device count matches
// ErrInvalidDevice.
func Open(ordinal int) (*Context, error) {
	d, err := driver()
	if err != nil {
		return nil, err
	}
	return open(d, ordinal)
}

// OpenDriver is Open over a given driver table, which must already be initialized (cuInit):
// the hook through which tests run the typed layer on fake tables.
func OpenDriver(d *cu.Driver, ordinal int) (*Context, error) {
	if d == nil {
		return nil, &unavailable{msg: "no CUDA driver found: nil driver table", err: cu.ErrUnavailable}
	}
	return open(d, ordinal)
}

func open(d *cu.Driver, ordinal int) (*Context, error) {
	x := describer{d}
	var n int32
	if err := x.check("cuDeviceGetCount", d.DeviceGetCount(&n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, &unavailable{msg: "no CUDA device found: the driver reports 0 devices", err: ErrNoDevice}
	}
	if ordinal < 0 || ordinal >= int(n) {
		return nil, fmt.Errorf("cuda: device %d: %w (the driver reports %d)", ordinal, ErrInvalidDevice, n)
	}
	info, dev, err := deviceInfo(d, ordinal)
	if err != nil {
		return nil, err
	}
	c := &Context{drv: d, x: x, dev: dev, info: info,
		buffers: map[*Buffer]struct{}{}, hosts: map[*HostBuffer]struct{}{}, modules: map[*Module]struct{}{},
		streams: map[*Stream]struct{}{}, events: map[*Event]struct{}{}}
	c.exec, err = newExecutor(func() error {
		if err := x.check("cuDevicePrimaryCtxRetain", d.PrimaryRetain(&c.ctx, dev)); err != nil {
			return err
		}
		if err := x.check("cuCtxSetCurrent", d.CtxSetCurrent(c.ctx)); err != nil {
			d.PrimaryRelease(dev)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := c.readLimits(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Context) readLimits() error {
	get := func(a cu.Attribute) (int, error) {
		var v int32
		err := c.x.check("cuDeviceGetAttribute", c.drv.DeviceGetAttr(&v, a, c.dev))
		return int(v), err
	}
	var err error
	for _, p := range []struct {
		a   cu.Attribute
		dst *int
	}{
		{cu.AttrMaxThreadsPerBlock, &c.lim.threadsPerBlock},
		{cu.AttrMaxBlockDimX, &c.lim.block[0]}, {cu.AttrMaxBlockDimY, &c.lim.block[1]}, {cu.AttrMaxBlockDimZ, &c.lim.block[2]},
		{cu.AttrMaxGridDimX, &c.lim.grid[0]}, {cu.AttrMaxGridDimY, &c.lim.grid[1]}, {cu.AttrMaxGridDimZ, &c.lim.grid[2]},
		{cu.AttrMaxSharedPerBlock, &c.lim.sharedDefault},
	} {
		if *p.dst, err = get(p.a); err != nil {
			return err
		}
	}
	c.lim.sharedOptin = max(c.info.MaxSharedPerBlock, c.lim.sharedDefault)
	return nil
}

// Info describes the context's device.
func (c *Context) Info() DeviceInfo { return c.info }

// do runs fn on the executor thread, refusing after Close.
func (c *Context) do(fn func() error) error { return c.exec.do(fn) }

// MemInfo returns the device's free and total memory in bytes (cuMemGetInfo_v2).
func (c *Context) MemInfo() (free, total uint64, err error) {
	err = c.do(func() error { return c.x.check("cuMemGetInfo_v2", c.drv.MemGetInfo(&free, &total)) })
	return free, total, err
}

// Synchronize waits for all work on the device (cuCtxSynchronize); a failed earlier launch
// surfaces here.
func (c *Context) Synchronize() error {
	return c.do(func() error { return c.x.check("cuCtxSynchronize", c.drv.CtxSynchronize()) })
}

// track records a live object for Close; it fails with ErrClosed after Close.
func (c *Context) track(add func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	add()
	return nil
}

func (c *Context) untrack(del func()) {
	c.mu.Lock()
	del()
	c.mu.Unlock()
}

// Close frees every live Buffer, HostBuffer, Event, Stream and Module made from the context, releases the
// primary context and stops the executor. Later calls on the context or its objects return
// ErrClosed. Close is idempotent; it returns the first error met while releasing.
func (c *Context) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	bufs, hosts, mods, strs, evs := c.buffers, c.hosts, c.modules, c.streams, c.events
	c.buffers, c.hosts, c.modules, c.streams, c.events = nil, nil, nil, nil, nil
	c.mu.Unlock()
	return c.exec.close(func() error {
		var first error
		keep := func(err error) {
			if first == nil {
				first = err
			}
		}
		for b := range bufs {
			keep(c.x.check("cuMemFree_v2", c.drv.MemFree(b.ptr)))
			b.markFreed()
		}
		for h := range hosts {
			keep(c.x.check("cuMemFreeHost", c.drv.MemFreeHost(h.ptr)))
			h.freed.Store(true)
		}
		for e := range evs {
			keep(c.x.check("cuEventDestroy_v2", c.drv.EventDestroy(e.h)))
		}
		for s := range strs {
			keep(c.x.check("cuStreamDestroy_v2", c.drv.StreamDestroy(s.h)))
		}
		for m := range mods {
			keep(c.x.check("cuModuleUnload", c.drv.ModuleUnload(m.h)))
		}
		keep(c.x.check("cuDevicePrimaryCtxRelease_v2", c.drv.PrimaryRelease(c.dev)))
		return first
	})
}

// Live reports how many buffers, modules, streams and events are alive (for tests and leak
// checks).
func (c *Context) Live() (buffers, modules, streams, events int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buffers), len(c.modules), len(c.streams), len(c.events)
}
