//go:build amd64 && !purego

package kvq

// gen_align.go rewrites kernels that gen_intacc.go and gen_runs.go write (their frame's vectors
// 64-byte aligned), so its go:generate line is in a file that sorts after theirs.

//go:generate go run gen_align.go
