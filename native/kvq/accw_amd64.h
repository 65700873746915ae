// ACC4_REG and ACC4_BCST are the f16 and bf16 AVX-512 accumulate kernels' eight multiply-adds
// of a row's 32 values (Z8, Z9) into four accumulators' vectors (Z0..Z7), the row's four
// weights at R8 (multi_amd64.s, multi_bf16_amd64.s). ACC4_REG broadcasts each weight into a
// register read by two FMAs; ACC4_BCST gives each FMA the weight as its embedded broadcast
// ({1to16}). The same products and sums, bit for bit. The kernels take ACC4_BCST where
// accFloatBcst is set (multi_amd64.go: AMD Zen 4 and Intel).
//
// On AMD Zen 4 (EPYC Genoa; a 512-bit FMA takes both FMA pipes a cycle) the register
// broadcasts held a row of 128 values and four accumulators at ~11.7 ns, ~43 cycles for its 32
// FMAs; ACC4_BCST takes ~9.1 ns (~33 cycles) in L1 and ~12-13 against ~14.3 ns streamed from
// DRAM (thread CPU time, the two alternated, best of 7; the 512-bit broadcasts compete with the
// VCVTPH2PS conversions for the non-FMA vector pipes). On AMD Zen 5 a memory broadcast in
// every FMA measured slower than register broadcasts in fp8's accumulate kernel
// (gen_avx512.go, multiAccFP8VBMI), so other CPUs keep ACC4_REG, but for Intel's f16 and bf16,
// whose ACC4_BCST loop's L2 prefetch took less time streamed (accFloatBcst).
#define ACC4_REG \
	VBROADCASTSS (R8), Z11; \
	VFMADD231PS Z11, Z8, Z0; \
	VFMADD231PS Z11, Z9, Z1; \
	VBROADCASTSS 4(R8), Z12; \
	VFMADD231PS Z12, Z8, Z2; \
	VFMADD231PS Z12, Z9, Z3; \
	VBROADCASTSS 8(R8), Z13; \
	VFMADD231PS Z13, Z8, Z4; \
	VFMADD231PS Z13, Z9, Z5; \
	VBROADCASTSS 12(R8), Z14; \
	VFMADD231PS Z14, Z8, Z6; \
	VFMADD231PS Z14, Z9, Z7

#define ACC4_BCST \
	VFMADD231PS.BCST (R8), Z8, Z0; \
	VFMADD231PS.BCST (R8), Z9, Z1; \
	VFMADD231PS.BCST 4(R8), Z8, Z2; \
	VFMADD231PS.BCST 4(R8), Z9, Z3; \
	VFMADD231PS.BCST 8(R8), Z8, Z4; \
	VFMADD231PS.BCST 8(R8), Z9, Z5; \
	VFMADD231PS.BCST 12(R8), Z8, Z6; \
	VFMADD231PS.BCST 12(R8), Z9, Z7

