//go:build !amd64 || purego

package attn

func readSum(buf []byte) uint64 { return readSumGo(buf) }
