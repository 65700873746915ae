//go:build amd64 && !purego

package kvq

// gen_runs.go copies kernels that gen_intacc.go, gen_f16acc.go, gen_tq4vnni.go and
// gen_turboacc.go write, so its go:generate line is in a file that sorts after theirs.

//go:generate go run gen_runs.go
