//go:build !linux

package kvcache

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }
