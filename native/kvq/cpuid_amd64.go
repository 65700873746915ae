//go:build amd64 && !purego

package kvq

// cpuid executes CPUID with the given leaf (subleaf 0).
func cpuid(leaf uint32) (eax, ebx, ecx, edx uint32)

// splitZMM reports a CPU that executes each 512-bit operation as two 256-bit halves: AMD
// family 19h (Zen 4; Zen 3 has no AVX-512). It is the one vendor test of the kernel choice:
// where it holds, the formats whose 256-bit accumulate kernels measured faster than their
// 512-bit ones on such a core (f16, q8_0, bf16, turbo3; multi_amd64.go, multi_avx2x_amd64.go)
// use the 256-bit ones; every other CPU, Intel's and AMD family 1Ah (Zen 5) included, keeps
// the 512-bit kernels.
var splitZMM = func() bool {
	_, b, c, d := cpuid(0)
	if b != 0x68747541 || d != 0x69746e65 || c != 0x444d4163 { // "AuthenticAMD"
		return false
	}
	a, _, _, _ := cpuid(1)
	family := a >> 8 & 0xf
	if family == 0xf {
		family += a >> 20 & 0xff
	}
	return family == 0x19
}()
