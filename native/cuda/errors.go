package cuda

import (
	"errors"
	"fmt"

	"github.com/kvlab/kvlab/native/cuda/internal/cu"
)

// Sentinel errors. Every error the package returns for a failed driver call is an *Error,
// which matches the sentinel of its CUresult with errors.Is; ErrNoCUDA also matches the
// results that mean CUDA cannot be used on this machine at all.
var (
	// ErrNoCUDA means no CUDA driver is usable: the library is missing (its message starts
	// "no CUDA driver found: "), the platform is not Linux, there is no device, or the
	// driver is too old or a stub.
	ErrNoCUDA = errors.New("no CUDA driver found")
	// ErrOutOfMemory is CUDA_ERROR_OUT_OF_MEMORY.
	ErrOutOfMemory = &sentinel{cu.ErrorOutOfMemory, "out of device memory"}
	// ErrInvalidValue is CUDA_ERROR_INVALID_VALUE.
	ErrInvalidValue = &sentinel{cu.ErrorInvalidValue, "invalid value"}
	// ErrNoDevice is CUDA_ERROR_NO_DEVICE (it also matches ErrNoCUDA).
	ErrNoDevice = &sentinel{cu.ErrorNoDevice, "no CUDA device"}
	// ErrInvalidDevice is CUDA_ERROR_INVALID_DEVICE: an ordinal past the device count.
	ErrInvalidDevice = &sentinel{cu.ErrorInvalidDevice, "invalid device ordinal"}
	// ErrNotFound is CUDA_ERROR_NOT_FOUND: for example a kernel name not in a module.
	ErrNotFound = &sentinel{cu.ErrorNotFound, "named symbol not found"}
	// ErrInvalidImage covers CUDA_ERROR_INVALID_IMAGE, _INVALID_PTX, _NO_BINARY_FOR_GPU and
	// _UNSUPPORTED_PTX_VERSION: a module the driver cannot load.
	ErrInvalidImage = &sentinel{cu.ErrorInvalidImage, "module image not loadable"}
	// ErrLaunch covers the launch failures (_LAUNCH_FAILED, _ILLEGAL_ADDRESS,
	// _MISALIGNED_ADDRESS, _LAUNCH_OUT_OF_RESOURCES, _LAUNCH_TIMEOUT). After the first three
	// the context is unusable.
	ErrLaunch = &sentinel{cu.ErrorLaunchFailed, "kernel launch failed"}
	// ErrNotReady is CUDA_ERROR_NOT_READY.
	ErrNotReady = &sentinel{cu.ErrorNotReady, "not ready"}
	// ErrClosed is returned for a use of a Context, Buffer, Stream, Event or Module after
	// its Close or Free.
	ErrClosed = errors.New("cuda: use after close")
	// ErrCompile is matched by every NVRTC compile failure (*CompileError).
	ErrCompile = errors.New("cuda: kernel compile failed")
	// ErrBadLaunch is returned, before the driver is called, for a launch whose geometry or
	// arguments are invalid for the device.
	ErrBadLaunch = errors.New("cuda: invalid launch")
)

// sentinel is a comparable error value standing for one CUresult (or a class of them).
type sentinel struct {
	code cu.Result
	msg  string
}

func (s *sentinel) Error() string { return "cuda: " + s.msg }

// Error is a failed driver call: the operation (the C symbol), the CUresult, and the
// driver's own name and description of it.
type Error struct {
	Op   string    // C symbol, e.g. "cuMemAlloc_v2"
	Code cu.Result // the CUresult
	Name string    // the driver's name for Code, e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Msg  string    // the driver's description, e.g. "out of memory"
}

func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = fmt.Sprintf("CUresult %d", int32(e.Code))
	}
	if e.Msg == "" {
		return fmt.Sprintf("cuda: %s: %s", e.Op, name)
	}
	return fmt.Sprintf("cuda: %s: %s: %s", e.Op, name, e.Msg)
}

// Is matches the sentinel of e's code, and ErrNoCUDA for the codes that mean CUDA cannot be
// used here.
func (e *Error) Is(target error) bool {
	if target == ErrNoCUDA {
		switch e.Code {
		case cu.ErrorNoDevice, cu.ErrorInsufficientDrv, cu.ErrorStubLibrary, cu.ErrorDeviceUnavailable:
			return true
		}
		return false
	}
	s, ok := target.(*sentinel)
	if !ok {
		return false
	}
	if s == ErrInvalidImage {
		switch e.Code {
		case cu.ErrorInvalidImage, cu.ErrorInvalidPTX, cu.ErrorNoBinaryForGPU, cu.ErrorUnsupportedPTX:
			return true
		}
		return false
	}
	if s == ErrLaunch {
		switch e.Code {
		case cu.ErrorLaunchFailed, cu.ErrorIllegalAddress, cu.ErrorMisalignedAddress, cu.ErrorLaunchOutOfRes, cu.ErrorLaunchTimeout:
			return true
		}
		return false
	}
	return s.code == e.Code
}

// Code returns the CUresult of err when it is (or wraps) an *Error, else Success and false.
func Code(err error) (cu.Result, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	return cu.Success, false
}

// describer names CUresults with the driver's cuGetErrorName and cuGetErrorString.
type describer struct{ d *cu.Driver }

// check returns nil for Success and an *Error for anything else.
func (x describer) check(op string, r cu.Result) error {
	if r == cu.Success {
		return nil
	}
	e := &Error{Op: op, Code: r}
	if x.d != nil && x.d.GetErrorName != nil {
		var p *byte
		if x.d.GetErrorName(r, &p) == cu.Success {
			e.Name = cu.GoString(p)
		}
	}
	if x.d != nil && x.d.GetErrorString != nil {
		var p *byte
		if x.d.GetErrorString(r, &p) == cu.Success {
			e.Msg = cu.GoString(p)
		}
	}
	return e
}

// CompileError is an NVRTC failure: the step, the nvrtcResult with NVRTC's description, the
// program's name and architecture, and the compiler's log. It matches ErrCompile.
type CompileError struct {
	Op      string // the NVRTC symbol that failed
	Code    cu.NVRTCResult
	Msg     string // nvrtcGetErrorString
	Program string // the program (source file) name
	Arch    string // the --gpu-architecture value
	Log     string // the program log; may be empty
}

func (e *CompileError) Error() string {
	s := fmt.Sprintf("cuda: compile %s for %s: %s: %s", e.Program, e.Arch, e.Op, e.Msg)
	if e.Log != "" {
		s += "\n" + e.Log
	}
	return s
}

// Is matches ErrCompile.
func (e *CompileError) Is(target error) bool { return target == ErrCompile }
