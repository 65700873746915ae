package main

import (
	"fmt"
	"path/filepath"

	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/backends"
	"github.com/kvlab/kvlab/native/model"
)

// checkDevice refuses a --device value that is not a backend.
func checkDevice(device string) error {
	if device != backend.CPU && device != backend.CUDA {
		return fmt.Errorf("--device %q: want cpu or cuda", device)
	}
	return nil
}

// openDevice opens --device's backend (native/backends): nil for the CPU, whose path the
// commands run as they always have. Without a CUDA driver "cuda" fails with the one-line "no
// CUDA driver found: …".
func openDevice(device string) (backend.Backend, error) {
	if err := checkDevice(device); err != nil {
		return nil, err
	}
	if device == backend.CPU {
		return nil, nil
	}
	return backends.Open(device)
}

// placeModel checks m's shape against the backend and places its weights there.
func placeModel(be backend.Backend, device, path string, m *model.Model, progress func(done, total int64)) (backend.Model, error) {
	if err := be.Check(m.Hparams); err != nil {
		return nil, fmt.Errorf("--device %s: %s: %w; run it with --device cpu", device, filepath.Base(path), err)
	}
	dm, err := be.Load(m, backend.LoadOptions{Progress: progress})
	if err != nil {
		return nil, fmt.Errorf("--device %s: %w", device, err)
	}
	return dm, nil
}
