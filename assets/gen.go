//go:build ignore

// gen rebuilds calc.wasm from wasm/cmd/calc for GOOS=js GOARCH=wasm, small and reproducible
// (-trimpath, no symbols or DWARF, no VCS stamp), and copies wasm_exec.js from the same
// toolchain, so the two always match. Run it with `go generate ./assets`.
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "assets/gen:", err)
		os.Exit(1)
	}
}

func run() error {
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", "calc.wasm", "../wasm/cmd/calc")
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building calc.wasm: %w", err)
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "lib", "wasm", "wasm_exec.js")
	js, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile("wasm_exec.js"); err == nil && bytes.Equal(old, js) {
		return nil
	}
	return os.WriteFile("wasm_exec.js", js, 0o644)
}
