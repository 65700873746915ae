//go:build amd64 && !purego

package kvq

// fp8F32 is fp8's kernels on Intel CPUs with AVX-512 VBMI (intelCPU, hasFP8VBMI): the scores
// through multiScoresFP8F32 (gen_avx512.go's fp8ScoresF32), float32 multiply-adds on the
// codes decoded by table, the values through multiAccFP8VBMI (float32 weights). Against the
// bf16 kernels that fp8VBMI runs where the CPU has AVX-512 BF16 (fp8BF16Active) neither the
// query nor the weights are rounded to bf16: the float bound alone (ScoresGrid is the query as
// it is; AccumulateStep the float kernels'). There VDPBF16PS Z takes 2.2 cycles and VPERMI2B Z
// 2.0 (cpuid_amd64.go's intelCPU), so the bf16 kernels took about twice the cycles they take
// on AMD Zen 4. On 2 vCPUs of a Xeon (family 6 model 167 as reported), rows of 128 values,
// four queries, thread CPU time, alternated (TestFP8F32Speed), ns a row min/median: scores
// in cache 10.64/10.69 against 13.87/13.89 (multiScoresFP8BF16H), streamed 13.15/13.50
// against 15.45/15.89; values in cache 9.47/9.51 against 13.44/13.47 (multiAccFP8BF16),
// streamed 15.27/15.88 against 16.83/17.15. Attention's decode (native/attn
// TestDecodeBreakdown, fp8, 131072 cells, one thread, test binaries alternated four times,
// load 21–24 on the 2 vCPUs, min): whole 30.69–31.06 ns a row against 34.68–38.34 (f16 in
// the same runs 32.63–36.75), scores 13.84–15.02 against 16.17–17.50, values 16.02–17.35
// against 18.80–20.22; at load ~16, three alternations: whole 28.95–29.26 against 34.35–36.40.
// A weight whose w·scale is subnormal costs a microcode assist in each of its FMAs there:
// weights of 1e-41 took 1174 ns a row of 128 values against 13.1 (multiAccFP8BF16, which
// flushes them to 0 as it rounds them to bf16: 48 against 13.5). Attention's softmax gives no
// weight below 2⁻⁶⁴ (native/attn's expFloor), so only rows whose scale is below ~2⁻⁶² reach it.
// Where the CPU has AMX-BF16 (fp8AMXOn), the scores of rows of 128 values go through
// multiScoresFP8AMX instead (multi_fp8amx_amd64.go: the query rounded to bf16, subnormal codes
// read as zero), and their values through multiAccFP8AMXA (the weights rounded to bf16, the
// same codes zero) unless KVLAB_ACC16 is set (fp8AMXAccOn).
var fp8F32 = &multiKernels{scores: fp8ScoresF32, acc: multiAccFP8VBMI}

// fp8F32On selects fp8F32 over fp8VBMI: Intel CPUs (intelCPU). A variable so that tests can
// run both.
var fp8F32On = intelCPU

// fp8ScoresF32 is multiKernels' scores for fp8 through multiScoresFP8F32: the four queries
// (d apart) packed as the kernel takes them (fp8PackF32, 64-byte aligned on the stack up to
// multiScratchDim values), the row scale 4 bytes before a row's end.
func fp8ScoresF32(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int) {
	var stack [8*multiScratchDim + 16]float32
	pack := align64(stack[:])
	if 8*nv > len(pack) {
		pack = make([]float32, 8*nv)
	}
	fp8PackF32(&pack[0], q, d, nv)
	multiScoresFP8F32(&pack[0], nv, rows, rb, m, out, ostride, rb-4)
}

//go:noescape
func fp8PackF32(dst, q *float32, d, nv int)

//go:noescape
func multiScoresFP8F32(q *float32, nv int, rows *byte, rb, m int, out *float32, ostride, so int)
