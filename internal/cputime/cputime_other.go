//go:build !linux

package cputime

import "time"

// Thread falls back to the wall clock where a thread's CPU time is not at hand.
func Thread() time.Duration { return time.Since(start) }
