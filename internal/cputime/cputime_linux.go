package cputime

import (
	"syscall"
	"time"
	"unsafe"
)

// Thread is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID). The caller locks its OS
// thread for the measurement to mean anything.
func Thread() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
