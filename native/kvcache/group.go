package kvcache

import (
	"fmt"

	"github.com/kvlab/kvlab/native/kvq"
)

// newGroupStore builds the store of a group format (q2k K).
func newGroupStore(f kvq.Format, d int, cfg Config) (store, error) {
	return nil, fmt.Errorf("%w: %s is not wired into the cache yet", kvq.ErrUnsupported, f)
}
