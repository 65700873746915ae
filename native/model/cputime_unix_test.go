//go:build unix

package model

import (
	"syscall"
	"time"
)

// cpuTime is the user+system CPU time of the process so far, for benchmark metrics that do not
// count time spent waiting for a core on a busy machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
