//go:build amd64 && !purego

package kvq

// gen_runs.go copies kernels that gen_intacc.go, gen_f16acc.go, gen_tq4vnni.go,
// gen_turboacc.go, gen_avx2f.go, gen_avx2int.go and gen_avx2intacc.go write, so its
// go:generate line is in a file that sorts after theirs.

//go:generate go run gen_runs.go
