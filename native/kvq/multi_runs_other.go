//go:build !amd64 || purego

package kvq

// accRuns has no kernel path here (multi_runs_amd64.go).
func accRuns(c Codec, acc []float32, n int, w []float32, runs [][]byte) bool { return false }

// scoresRuns has no kernel path here (multi_runs_amd64.go).
func scoresRuns(c Codec, q []float32, n int, runs [][]byte, out []float32) bool { return false }

// scoresRunsFar prefetches no run further on here (multi_runs_amd64.go).
func scoresRunsFar(c Codec) int { return 0 }

// mergeRuns is off here (multi_runs_amd64.go).
const mergeRuns = false

// mergeCodec takes every codec here (mergeRuns is off; multi_runs_amd64.go).
func mergeCodec(Codec) bool { return true }
