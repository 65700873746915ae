package lab

import (
	"fmt"

	"github.com/kvlab/kvlab/native/kvq"
)

// newGroupStore builds a store for a group format (q2k K).
func newGroupStore(f kvq.Format, d, n int, data []float32) (store, error) {
	return store{}, fmt.Errorf("%w: %s is not wired into the gate yet", kvq.ErrUnsupported, f)
}
