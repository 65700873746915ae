package server

import (
	"errors"

	"github.com/kvlab/kvlab/server/api"
)

// MemInfo is the memory the KV policy budgets against (api.MemInfo).
type MemInfo = api.MemInfo

// ErrMemUnknown is returned where the platform has no way to read free memory.
var ErrMemUnknown = errors.New("free memory is not known on this platform")

// HostMemory reads the host's total and available memory.
func HostMemory() (MemInfo, error) { return hostMemory() }
