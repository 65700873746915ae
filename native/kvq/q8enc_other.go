//go:build !amd64 || purego

package kvq

// q8_0EncodeVec: no vector kernel here; q8_0Encode runs its Go loops.
func q8_0EncodeVec(qs []byte, src []float32) (float32, bool) { return 0, false }

func setQ8EncVec(on bool) {}

func hasQ8EncVec() bool { return false }

func q8EncKernels() map[string]func(qs *byte, src *float32) (float32, bool) { return nil }
