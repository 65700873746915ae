//go:build linux

package cu

import (
	"fmt"
	"strings"

	"github.com/ebitengine/purego"
)

// Load opens the CUDA driver library (DriverCandidates) and binds every Driver symbol. It
// fails with ErrUnavailable naming the library and the loader's reason.
func Load() (*Driver, error) {
	d := &Driver{}
	if err := open(DriverCandidates(), d.Symbols()); err != nil {
		return nil, err
	}
	return d, nil
}

// LoadNVRTC opens the NVRTC library (NVRTCCandidates) and binds every NVRTC symbol, and
// returns the path it opened.
func LoadNVRTC() (*NVRTC, string, error) {
	n := &NVRTC{}
	var opened string
	err := openAs(NVRTCCandidates(), n.Symbols(), &opened)
	if err != nil {
		return nil, "", err
	}
	return n, opened, nil
}

func open(candidates []string, syms []Symbol) error {
	var opened string
	return openAs(candidates, syms, &opened)
}

func openAs(candidates []string, syms []Symbol, opened *string) error {
	var reasons []string
	for _, name := range candidates {
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		if err := bind(h, syms); err != nil {
			purego.Dlclose(h)
			return fmt.Errorf("%w: %s: %v", ErrUnavailable, name, err)
		}
		*opened = name
		return nil
	}
	return fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(reasons, "; "))
}

// bind resolves every symbol in h; a required symbol that is missing under all of its names
// is an error naming it.
func bind(h uintptr, syms []Symbol) error {
	for _, s := range syms {
		var addr uintptr
		for _, n := range s.Names {
			if a, err := purego.Dlsym(h, n); err == nil && a != 0 {
				addr = a
				break
			}
		}
		if addr == 0 {
			if s.Optional {
				continue
			}
			return fmt.Errorf("missing symbol %s", strings.Join(s.Names, " or "))
		}
		purego.RegisterFunc(s.Fn, addr)
	}
	return nil
}
