//go:build !amd64 || purego

package kvq

// q2kGridScore reports that q2k's scores take the query as it is here (no integer kernel).
func q2kGridScore(h *Q2KHead, q []float32, cell int) (score, mag, grid float64, ok bool) {
	return 0, 0, 0, false
}
