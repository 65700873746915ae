//go:build (!amd64 && !arm64) || purego

package kvq

// Without the assembly kernels these formats' MultiQuery calls run DotMany and AccumulateMany
// per query.
var multiBF16, multiQ4_1, multiQ5_0, multiQ5_1, multiIQ4NL, multiFP8, multiTurbo4, multiTurbo3, multiTurbo2 *multiKernels
