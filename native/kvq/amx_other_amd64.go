//go:build !linux && amd64 && !purego

package kvq

// amxPermit is false: the AMX kernels ask Linux alone for the tiles.
func amxPermit() bool { return false }
