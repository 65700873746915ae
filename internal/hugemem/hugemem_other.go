//go:build !linux

package hugemem

const supported = false

func alignOffset([]byte) int { return 0 }

func advise([]byte) {}

func readTHPNever() bool { return true }

func hugeBytes([][]byte) int64 { return 0 }
