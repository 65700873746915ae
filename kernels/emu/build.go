// Package emu builds the CPU emulator of kvlab's CUDA kernels: a shared library that stands
// in for both libcuda.so.1 and libnvrtc.so (emu_driver.cc.in), so that tests run kvlab's real
// binding, engine and kernels on a machine without a GPU. Its "NVRTC" compiles each program
// as host C++ with g++ against emu.h; its launches run every CUDA thread as a fiber.
//
// The emulator checks semantics, not speed: a decode over a few thousand cells takes about
// a second. Timings it reports are host wall-clock and mean nothing for a GPU.
package emu

import (
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed emu.h emu_driver.cc.in
var files embed.FS

// Build writes the emulator's sources into dir and compiles the library; it returns the
// library's path. It needs a C++20 compiler ($CXX, default g++).
func Build(dir string) (string, error) {
	for _, name := range []string{"emu.h", "emu_driver.cc.in"} {
		b, err := files.ReadFile(name)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, strings.TrimSuffix(name, ".in")), b, 0o644); err != nil {
			return "", err
		}
	}
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	lib := filepath.Join(dir, "libkvlabemu.so")
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	cmd := exec.Command(cxx, "-std=c++20", "-O2", "-fPIC", "-shared", "-o", lib,
		fmt.Sprintf(`-DEMU_INCLUDE_DIR="%s"`, abs), filepath.Join(dir, "emu_driver.cc"), "-ldl")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("emu: build: %v\n%s", err, out)
	}
	return lib, nil
}
