// Package isa is the x86 instruction sets the kernels (native/kvq, native/wkern, native/attn,
// native/model) may use on this CPU: the CPU's features (golang.org/x/sys/cpu) less those the
// KVLAB_NO_* switches hide, each read once at start, so that one machine can run and measure the
// kernels of CPUs that lack them:
//
//   - KVLAB_NO_AVX512: the AVX2 kernels on an AVX-512 CPU;
//   - KVLAB_NO_AVX512VNNI: what Intel Skylake-SP/X runs (AVX-512 F, CD, BW, DQ, VL alone): AVX-512
//     VNNI, VBMI and BF16 hidden, and AVX-VNNI on an AVX-512 CPU (Skylake has none);
//   - KVLAB_NO_AVX512VBMI: what Intel Cascade Lake runs (VNNI without VBMI or BF16);
//   - KVLAB_NO_AVX512BF16: what Intel Ice Lake-SP runs (VNNI and VBMI without BF16);
//   - KVLAB_NO_AVXVNNI: the plain AVX2 kernels on a CPU with the VEX AVX-VNNI forms;
//   - KVLAB_ACC16: the values kernels keep their exact weights where kernels with 8-bit ones
//     exist: 16-bit integer weights for the block formats and the turbo tiers, float32 weights
//     and the older eight-accumulator scores for fp8 (native/kvq's AccumulateStep says which
//     a codec runs);
//   - KVLAB_Q8_TWO_DIGITS: q8_0's integer scores quantize the query to two signed bytes a value
//     (16 bits) instead of one: a query rounding 2⁸ times finer at twice the multiplies;
//   - KVLAB_NO_AVX2INTACC: the AVX2 values kernels with float32 weights instead of the integer
//     ones (the block formats on CPUs without AVX-512);
//   - KVLAB_NO_ZEN4: the AVX-512 kernels AMD Zen 5 runs on an AMD Zen 4, whose own flavours
//     (prefetch distance and hint, row loads, turbo2's and turbo3's query scale, and tq4's on
//     2 MiB pages: with KVLAB_NO_HUGEPAGES, or transparent huge pages off, tq4's scores round
//     the query per 32 values there too) are otherwise chosen there (Intel CPUs take some of
//     them, and their own, by kvq's intelCPU);
//   - KVLAB_NO_AMX: fp8's float32 scores and values kernels on an Intel CPU with AMX, in
//     place of its AMX ones (kvq's fp8AMXOn);
//   - KVLAB_NO_HUGEPAGES: not an instruction set but listed with them, so that a run's record
//     names it: the caches' row stores and the bandwidth yardstick stay on the system's default
//     pages (internal/hugemem reads it).
//
// Any value sets a switch. Off amd64 every flag is false.
package isa

import (
	"os"

	"golang.org/x/sys/cpu"
)

// Switches are the names of the switches, in the order Set lists them.
var Switches = []string{"KVLAB_NO_AVX512", "KVLAB_NO_AVX512VNNI", "KVLAB_NO_AVX512VBMI", "KVLAB_NO_AVX512BF16", "KVLAB_NO_AVXVNNI", "KVLAB_ACC16", "KVLAB_Q8_TWO_DIGITS", "KVLAB_NO_AVX2INTACC", "KVLAB_NO_ZEN4", "KVLAB_Z4NEW", "KVLAB_NO_AMX", "KVLAB_NO_HUGEPAGES"}

var (
	// NoAVX512 is KVLAB_NO_AVX512, read at start.
	NoAVX512 = on("KVLAB_NO_AVX512")
	// noAVX512VNNI and noAVX512VBMI are the Skylake-SP and Cascade Lake switches, read at start;
	// hiding VNNI hides VBMI too.
	noAVX512VNNI = on("KVLAB_NO_AVX512VNNI")
	noAVX512VBMI = noAVX512VNNI || on("KVLAB_NO_AVX512VBMI")

	// AVX512F is AVX-512 F unless KVLAB_NO_AVX512 is set.
	AVX512F = cpu.X86.HasAVX512F && !NoAVX512
	// AVX512VNNI, AVX512VBMI and AVX512BF16 are the CPU's AVX-512 VNNI, VBMI and BF16 as the
	// kernels may use them (KVLAB_NO_AVX512VNNI hides all three, KVLAB_NO_AVX512VBMI the last
	// two, KVLAB_NO_AVX512BF16 the last). They do not fold in KVLAB_NO_AVX512: their users check AVX-512 F (AVX512F) too.
	AVX512VNNI = cpu.X86.HasAVX512VNNI && !noAVX512VNNI
	AVX512VBMI = cpu.X86.HasAVX512VBMI && !noAVX512VBMI
	AVX512BF16 = cpu.X86.HasAVX512BF16 && !noAVX512VBMI && !on("KVLAB_NO_AVX512BF16")
	// AVXVNNI is the VEX-coded AVX-VNNI instructions (CPUID leaf 7 subleaf 1, EAX bit 4) unless
	// KVLAB_NO_AVXVNNI is set, or KVLAB_NO_AVX512VNNI on an AVX-512 CPU.
	AVXVNNI = cpu.X86.HasAVXVNNI && !on("KVLAB_NO_AVXVNNI") && !(noAVX512VNNI && cpu.X86.HasAVX512F)

	// Acc16 is KVLAB_ACC16, read at start: the values kernels with exact weights run even where
	// kernels with 8-bit weights exist (half the multiplies, a looser rounding of the weights).
	Acc16 = on("KVLAB_ACC16")

	// Q8TwoDigits is KVLAB_Q8_TWO_DIGITS, read at start: q8_0's integer scores take the query
	// at two digits (16 bits) a value instead of one byte.
	Q8TwoDigits = on("KVLAB_Q8_TWO_DIGITS")

	// NoAVX2IntAcc is KVLAB_NO_AVX2INTACC, read at start: the AVX2 values kernels of the block
	// formats take float32 weights instead of integer ones.
	NoAVX2IntAcc = on("KVLAB_NO_AVX2INTACC")

	// NoZen4 is KVLAB_NO_ZEN4, read at start: an AMD Zen 4 runs the AVX-512 kernels AMD Zen 5
	// runs, not its own flavours (Intel CPUs take some of those and their own: kvq's intelCPU).
	NoZen4 = on("KVLAB_NO_ZEN4")

	// Z4New is KVLAB_Z4NEW, read at start: an AMD Zen 4 takes the Zen 4 flavours written from
	// instruction counts and LLVM's znver4 model alone, not yet measured on a Zen 4 and slower
	// as a proxy on an Intel Xeon in cache (kvq's q50Z4), in place of the kernels it runs: the
	// contiguous decode's only (paged runs keep kvq's multiAccQ50VRunsINT).
	Z4New = on("KVLAB_Z4NEW")

	// AMXBF16 is the CPU's AMX tiles with BF16 (TDPBF16PS; Intel Sapphire Rapids and later) as
	// CPUID reports them unless KVLAB_NO_AMX is set, or AVX-512 VBMI is hidden (the switches
	// above stand for CPUs without AMX). It does not say that the OS lets this process use the
	// tiles (x/sys/cpu does not check that): users ask the OS for them too (native/kvq's
	// amxPermit) and take the AMX kernels only where it grants them.
	AMXBF16 = cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && !noAVX512VBMI && !on("KVLAB_NO_AMX")
)

// Set is the switches set in the environment now (read at each call: a run's record names the
// switches it ran with).
func Set() []string {
	var s []string
	for _, env := range Switches {
		if on(env) {
			s = append(s, env)
		}
	}
	return s
}

func on(env string) bool { return os.Getenv(env) != "" }
