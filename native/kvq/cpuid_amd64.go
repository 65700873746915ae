//go:build amd64 && !purego

package kvq

// cpuid executes CPUID with the given leaf (subleaf 0).
func cpuid(leaf uint32) (eax, ebx, ecx, edx uint32)

// splitZMM reports a CPU that executes each 512-bit operation as two 256-bit halves: AMD
// family 19h (Zen 4; Zen 3 has no AVX-512); every other CPU, Intel's and AMD family 1Ah
// (Zen 5) included, reports false. It is the one vendor test a per-vendor kernel choice is to
// use. No accumulate kernel is chosen by it: f16's, q8_0's, bf16's and turbo3's 256-bit ones,
// faster than their 512-bit ones in some runs of TestMultiQuerySpeed, made a whole f16 decode
// on a Zen 4 EPYC slower (native/attn BenchmarkDecode, 4096 cells: 4.5–7.9 against 2.0–5.0 ms
// over ten interleaved rounds at load 10–15, q4_0's unchanged decode no slower), and q8_0's
// read 13.6–20.9 against 13.7–13.9 ns a row in five interleaved kernel reports, so every
// AVX-512 CPU accumulates with the 512-bit kernels.
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
