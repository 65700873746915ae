//go:build !unix

package model

import "time"

// cpuTime is not measured on this platform: the CPU-time metrics read 0.
func cpuTime() time.Duration { return 0 }
