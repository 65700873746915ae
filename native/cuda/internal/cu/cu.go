// Package cu is the raw layer of kvlab's CUDA binding: the driver API (libcuda.so.1) and
// NVRTC (libnvrtc.so) as structs of func fields, one field per C symbol, with the C types
// spelled as Go types of the same size. Nothing here interprets a result: the error layer
// (package cuda) maps Result to Go errors, and the typed layer (package cuda) owns handles.
//
// The structs are plain Go values so that tests fill them with fake funcs (package fakecu);
// Load and LoadNVRTC bind them to the real libraries with purego on Linux and report
// ErrUnavailable elsewhere. Every symbol is bound by its exact versioned name
// (cuMemAlloc_v2, cuCtxPushCurrent_v2, …): the unversioned names are the CUDA 3.x ABI.
package cu

import (
	"errors"
	"unsafe"
)

// ErrUnavailable is returned by Load and LoadNVRTC when the library cannot be opened or
// lacks a required symbol; the message names the library and the loader's reason.
var ErrUnavailable = errors.New("library unavailable")

// Result is a CUresult (C enum, 32 bits).
type Result int32

// The CUresult codes the binding names. The error layer keeps every other code as a number.
const (
	Success                Result = 0
	ErrorInvalidValue      Result = 1
	ErrorOutOfMemory       Result = 2
	ErrorNotInitialized    Result = 3
	ErrorDeinitialized     Result = 4
	ErrorStubLibrary       Result = 34
	ErrorInsufficientDrv   Result = 35
	ErrorDeviceUnavailable Result = 46
	ErrorNoDevice          Result = 100
	ErrorInvalidDevice     Result = 101
	ErrorInvalidImage      Result = 200
	ErrorInvalidContext    Result = 201
	ErrorNoBinaryForGPU    Result = 209
	ErrorInvalidPTX        Result = 218
	ErrorUnsupportedPTX    Result = 222
	ErrorInvalidHandle     Result = 400
	ErrorNotFound          Result = 500
	ErrorNotReady          Result = 600
	ErrorIllegalAddress    Result = 700
	ErrorLaunchOutOfRes    Result = 701
	ErrorLaunchTimeout     Result = 702
	ErrorMisalignedAddress Result = 716
	ErrorLaunchFailed      Result = 719
	ErrorNotSupported      Result = 801
	ErrorUnknown           Result = 999
)

// Handles and scalars of the driver API, each the size of its C type.
type (
	Device    int32   // CUdevice
	Context   uintptr // CUcontext
	Module    uintptr // CUmodule
	Function  uintptr // CUfunction
	Stream    uintptr // CUstream; 0 is the legacy default stream
	Event     uintptr // CUevent
	DevicePtr uint64  // CUdeviceptr
	Attribute int32   // CUdevice_attribute
	FuncAttr  int32   // CUfunction_attribute
)

// Device attributes (CUdevice_attribute) the binding reads.
const (
	AttrMaxThreadsPerBlock       Attribute = 1
	AttrMaxBlockDimX             Attribute = 2
	AttrMaxBlockDimY             Attribute = 3
	AttrMaxBlockDimZ             Attribute = 4
	AttrMaxGridDimX              Attribute = 5
	AttrMaxGridDimY              Attribute = 6
	AttrMaxGridDimZ              Attribute = 7
	AttrMaxSharedPerBlock        Attribute = 8
	AttrWarpSize                 Attribute = 10
	AttrClockRate                Attribute = 13
	AttrMultiprocessorCount      Attribute = 16
	AttrMemoryClockRate          Attribute = 36
	AttrGlobalMemoryBusWidth     Attribute = 37
	AttrL2CacheSize              Attribute = 38
	AttrMaxThreadsPerSM          Attribute = 39
	AttrComputeCapabilityMajor   Attribute = 75
	AttrComputeCapabilityMinor   Attribute = 76
	AttrMaxSharedPerSM           Attribute = 81
	AttrMaxSharedPerBlockOptin   Attribute = 97
	FuncAttrMaxThreadsPerBlock   FuncAttr  = 0
	FuncAttrSharedSizeBytes      FuncAttr  = 1
	FuncAttrNumRegs              FuncAttr  = 4
	FuncAttrMaxDynamicSharedSize FuncAttr  = 8
)

// Driver is the CUDA driver API, one field per C function. Pointer parameters are Go
// pointers or unsafe.Pointer; the callee may only use them for the duration of the call.
type Driver struct {
	Init             func(flags uint32) Result                                // cuInit
	DriverGetVersion func(version *int32) Result                              // cuDriverGetVersion
	DeviceGetCount   func(count *int32) Result                                // cuDeviceGetCount
	DeviceGet        func(dev *Device, ordinal int32) Result                  // cuDeviceGet
	DeviceGetName    func(name *byte, size int32, dev Device) Result          // cuDeviceGetName
	DeviceGetAttr    func(v *int32, attr Attribute, dev Device) Result        // cuDeviceGetAttribute
	DeviceTotalMem   func(bytes *uint64, dev Device) Result                   // cuDeviceTotalMem_v2
	PrimaryRetain    func(ctx *Context, dev Device) Result                    // cuDevicePrimaryCtxRetain
	PrimaryRelease   func(dev Device) Result                                  // cuDevicePrimaryCtxRelease_v2
	CtxSetCurrent    func(ctx Context) Result                                 // cuCtxSetCurrent
	CtxPushCurrent   func(ctx Context) Result                                 // cuCtxPushCurrent_v2
	CtxPopCurrent    func(ctx *Context) Result                                // cuCtxPopCurrent_v2
	CtxSynchronize   func() Result                                            // cuCtxSynchronize
	MemGetInfo       func(free, total *uint64) Result                         // cuMemGetInfo_v2
	MemAlloc         func(p *DevicePtr, bytes uint64) Result                  // cuMemAlloc_v2
	MemFree          func(p DevicePtr) Result                                 // cuMemFree_v2
	MemcpyHtoD       func(dst DevicePtr, src unsafe.Pointer, n uint64) Result // cuMemcpyHtoD_v2
	MemcpyDtoH       func(dst unsafe.Pointer, src DevicePtr, n uint64) Result // cuMemcpyDtoH_v2
	MemcpyDtoD       func(dst, src DevicePtr, n uint64) Result                // cuMemcpyDtoD_v2
	MemcpyDtoDAsync  func(dst, src DevicePtr, n uint64, s Stream) Result      // cuMemcpyDtoDAsync_v2
	MemsetD8         func(dst DevicePtr, v uint8, n uint64) Result            // cuMemsetD8_v2
	// Page-locked host memory and asynchronous copies between it and the device.
	MemAllocHost    func(p *unsafe.Pointer, bytes uint64) Result                       // cuMemAllocHost_v2
	MemFreeHost     func(p unsafe.Pointer) Result                                      // cuMemFreeHost
	MemcpyHtoDAsync func(dst DevicePtr, src unsafe.Pointer, n uint64, s Stream) Result // cuMemcpyHtoDAsync_v2
	MemcpyDtoHAsync func(dst unsafe.Pointer, src DevicePtr, n uint64, s Stream) Result // cuMemcpyDtoHAsync_v2
	ModuleLoadData  func(m *Module, image unsafe.Pointer) Result                       // cuModuleLoadData
	ModuleUnload    func(m Module) Result                                              // cuModuleUnload
	ModuleGetFunc   func(f *Function, m Module, name *byte) Result                     // cuModuleGetFunction
	FuncGetAttr     func(v *int32, attr FuncAttr, f Function) Result                   // cuFuncGetAttribute
	FuncSetAttr     func(f Function, attr FuncAttr, v int32) Result                    // cuFuncSetAttribute
	// LaunchKernel is cuLaunchKernel: params points to an array of pointers, one per kernel
	// parameter, each to that parameter's value; extra is nil.
	LaunchKernel   func(f Function, gx, gy, gz, bx, by, bz, shared uint32, s Stream, params, extra unsafe.Pointer) Result
	Occupancy      func(blocks *int32, f Function, blockSize int32, dynShared uint64) Result // cuOccupancyMaxActiveBlocksPerMultiprocessor
	StreamCreate   func(s *Stream, flags uint32) Result                                      // cuStreamCreate
	StreamDestroy  func(s Stream) Result                                                     // cuStreamDestroy_v2
	StreamSync     func(s Stream) Result                                                     // cuStreamSynchronize
	EventCreate    func(e *Event, flags uint32) Result                                       // cuEventCreate
	EventDestroy   func(e Event) Result                                                      // cuEventDestroy_v2
	EventRecord    func(e Event, s Stream) Result                                            // cuEventRecord
	EventSync      func(e Event) Result                                                      // cuEventSynchronize
	EventElapsed   func(ms *float32, start, end Event) Result                                // cuEventElapsedTime_v2 or cuEventElapsedTime
	GetErrorName   func(r Result, s **byte) Result                                           // cuGetErrorName
	GetErrorString func(r Result, s **byte) Result                                           // cuGetErrorString
}

// Symbol binds one C symbol to one func field: Names are tried in order (the first is the
// preferred versioned name); an Optional symbol that is missing leaves the field nil.
type Symbol struct {
	Names    []string
	Fn       any // pointer to the func field
	Optional bool
}

// Symbols lists the symbols of d, one per field of Driver, in a stable order.
func (d *Driver) Symbols() []Symbol {
	s := func(fn any, names ...string) Symbol { return Symbol{Names: names, Fn: fn} }
	return []Symbol{
		s(&d.Init, "cuInit"),
		s(&d.DriverGetVersion, "cuDriverGetVersion"),
		s(&d.DeviceGetCount, "cuDeviceGetCount"),
		s(&d.DeviceGet, "cuDeviceGet"),
		s(&d.DeviceGetName, "cuDeviceGetName"),
		s(&d.DeviceGetAttr, "cuDeviceGetAttribute"),
		s(&d.DeviceTotalMem, "cuDeviceTotalMem_v2"),
		s(&d.PrimaryRetain, "cuDevicePrimaryCtxRetain"),
		s(&d.PrimaryRelease, "cuDevicePrimaryCtxRelease_v2"),
		s(&d.CtxSetCurrent, "cuCtxSetCurrent"),
		s(&d.CtxPushCurrent, "cuCtxPushCurrent_v2"),
		s(&d.CtxPopCurrent, "cuCtxPopCurrent_v2"),
		s(&d.CtxSynchronize, "cuCtxSynchronize"),
		s(&d.MemGetInfo, "cuMemGetInfo_v2"),
		s(&d.MemAlloc, "cuMemAlloc_v2"),
		s(&d.MemFree, "cuMemFree_v2"),
		s(&d.MemcpyHtoD, "cuMemcpyHtoD_v2"),
		s(&d.MemcpyDtoH, "cuMemcpyDtoH_v2"),
		s(&d.MemcpyDtoD, "cuMemcpyDtoD_v2"),
		s(&d.MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
		s(&d.MemsetD8, "cuMemsetD8_v2"),
		s(&d.MemAllocHost, "cuMemAllocHost_v2"),
		s(&d.MemFreeHost, "cuMemFreeHost"),
		s(&d.MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
		s(&d.MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
		s(&d.ModuleLoadData, "cuModuleLoadData"),
		s(&d.ModuleUnload, "cuModuleUnload"),
		s(&d.ModuleGetFunc, "cuModuleGetFunction"),
		s(&d.FuncGetAttr, "cuFuncGetAttribute"),
		s(&d.FuncSetAttr, "cuFuncSetAttribute"),
		s(&d.LaunchKernel, "cuLaunchKernel"),
		s(&d.Occupancy, "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
		s(&d.StreamCreate, "cuStreamCreate"),
		s(&d.StreamDestroy, "cuStreamDestroy_v2"),
		s(&d.StreamSync, "cuStreamSynchronize"),
		s(&d.EventCreate, "cuEventCreate"),
		s(&d.EventDestroy, "cuEventDestroy_v2"),
		s(&d.EventRecord, "cuEventRecord"),
		s(&d.EventSync, "cuEventSynchronize"),
		s(&d.EventElapsed, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
		s(&d.GetErrorName, "cuGetErrorName"),
		s(&d.GetErrorString, "cuGetErrorString"),
	}
}

// NVRTCResult is an nvrtcResult (C enum, 32 bits).
type NVRTCResult int32

// NVRTC result codes the binding names.
const (
	NVRTCSuccess          NVRTCResult = 0
	NVRTCInvalidOption    NVRTCResult = 5
	NVRTCCompilationError NVRTCResult = 6
)

// Program is an nvrtcProgram handle.
type Program uintptr

// NVRTC is the runtime compiler's API, one field per C function. String arrays
// (const char* const*) are passed as a pointer to the first of a Go array of pointers to
// NUL-terminated bytes, which the caller keeps pinned for the call.
type NVRTC struct {
	Version        func(major, minor *int32) NVRTCResult                                                              // nvrtcVersion
	CreateProgram  func(p *Program, src *byte, name *byte, nHeaders int32, headers, names unsafe.Pointer) NVRTCResult // nvrtcCreateProgram
	CompileProgram func(p Program, nOptions int32, options unsafe.Pointer) NVRTCResult                                // nvrtcCompileProgram
	LogSize        func(p Program, size *uint64) NVRTCResult                                                          // nvrtcGetProgramLogSize
	Log            func(p Program, log *byte) NVRTCResult                                                             // nvrtcGetProgramLog
	CUBINSize      func(p Program, size *uint64) NVRTCResult                                                          // nvrtcGetCUBINSize
	CUBIN          func(p Program, cubin *byte) NVRTCResult                                                           // nvrtcGetCUBIN
	PTXSize        func(p Program, size *uint64) NVRTCResult                                                          // nvrtcGetPTXSize
	PTX            func(p Program, ptx *byte) NVRTCResult                                                             // nvrtcGetPTX
	DestroyProgram func(p *Program) NVRTCResult                                                                       // nvrtcDestroyProgram
	ErrorString    func(r NVRTCResult) string                                                                         // nvrtcGetErrorString
	NumArchs       func(n *int32) NVRTCResult                                                                         // nvrtcGetNumSupportedArchs (optional)
	Archs          func(archs *int32) NVRTCResult                                                                     // nvrtcGetSupportedArchs (optional)
}

// Symbols lists the symbols of n, one per field of NVRTC.
func (n *NVRTC) Symbols() []Symbol {
	s := func(fn any, name string) Symbol { return Symbol{Names: []string{name}, Fn: fn} }
	o := func(fn any, name string) Symbol { return Symbol{Names: []string{name}, Fn: fn, Optional: true} }
	return []Symbol{
		s(&n.Version, "nvrtcVersion"),
		s(&n.CreateProgram, "nvrtcCreateProgram"),
		s(&n.CompileProgram, "nvrtcCompileProgram"),
		s(&n.LogSize, "nvrtcGetProgramLogSize"),
		s(&n.Log, "nvrtcGetProgramLog"),
		s(&n.CUBINSize, "nvrtcGetCUBINSize"),
		s(&n.CUBIN, "nvrtcGetCUBIN"),
		s(&n.PTXSize, "nvrtcGetPTXSize"),
		s(&n.PTX, "nvrtcGetPTX"),
		s(&n.DestroyProgram, "nvrtcDestroyProgram"),
		s(&n.ErrorString, "nvrtcGetErrorString"),
		o(&n.NumArchs, "nvrtcGetNumSupportedArchs"),
		o(&n.Archs, "nvrtcGetSupportedArchs"),
	}
}

// CString returns s as NUL-terminated bytes.
func CString(s string) []byte { return append([]byte(s), 0) }

// GoString copies the NUL-terminated bytes at p (nil gives "").
func GoString(p *byte) string {
	if p == nil {
		return ""
	}
	var n int
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
