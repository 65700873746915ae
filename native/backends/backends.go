// Package backends opens a compute backend by name: the one constructor the server and the
// commands choose devices through.
package backends

import (
	"fmt"

	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/backend/cpu"
	cudabackend "github.com/kvlab/kvlab/native/backend/cuda"
)

// Names are the devices Open takes.
func Names() []string { return []string{backend.CPU, backend.CUDA} }

// Open opens the backend named device: "cpu" (or empty), or "cuda" (GPU 0). Without a CUDA
// driver "cuda" fails with the one-line "no CUDA driver found: …".
func Open(device string) (backend.Backend, error) {
	switch device {
	case "", backend.CPU:
		return cpu.New(), nil
	case backend.CUDA:
		b, err := cudabackend.Open(0)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	return nil, fmt.Errorf("--device %q: want cpu or cuda", device)
}
