//go:build amd64 && !purego && !kvlabevex

package kvq

// avx2IntTwin runs the AVX-VNNI forms' EVEX twins in the kvlabevex build
// (multi_avx2int_evex_amd64.go) where its tests select them; here it reports false. A static
// call, so the driver's stack buffers stay on the stack (a function variable in its place
// made them escape: TestOverlayMultiQuery's allocation count).
func avx2IntTwin(kind int, bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32) bool {
	return false
}

// avx2TwinsOn reports whether avx2IntTwin runs the kernels (the runs flavours then stand aside).
func avx2TwinsOn() bool { return false }
