package kvcache

import (
	"syscall"
	"time"
)

// threadCPU is the calling OS thread's CPU time (RUSAGE_THREAD), for timings on a shared
// machine; ok is false where it cannot be read.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
