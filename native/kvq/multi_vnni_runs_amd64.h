// The runs flavours' prefetch pointer (multi_vnni_amd64.s: multiScoresQ40HdrZ4RunsVNNI, which
// restores HDRPF and HDRFAR after it): pf bytes (the argument at 80(FP)) past each group's
// rows, and the far prefetches at the same lines.
#undef HDRPF
#define HDRPF \
	MOVQ pf+80(FP), AX; \
	ADDQ DI, AX
#undef HDRFAR
#define HDRFAR 0
