// Package kernels holds kvlab's CUDA C++ sources, embedded in the binary and compiled at run
// time by NVRTC for the device in use (native/cuda). Each .cu file is one module; the .cuh
// headers are given to every compile by name. The decode and prefill attention kernels are
// templates in kv_attn.cuh, instantiated per shape by native/cuda/engine.
//
// The sources use no CUDA headers: common.cuh defines the few types and conversions they
// need with inline PTX, and, under KVLAB_EMU, takes them from emu/emu.h instead, so the same
// kernels also compile as host C++ and run on the CPU in tests (package kernels/emu).
package kernels

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
)

//go:embed *.cu *.cuh
var files embed.FS

// Files lists the embedded source files (.cu and .cuh), sorted.
func Files() []string {
	ents, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// Modules lists the .cu files: one NVRTC program each.
func Modules() []string {
	var out []string
	for _, f := range Files() {
		if strings.HasSuffix(f, ".cu") {
			out = append(out, f)
		}
	}
	return out
}

// Read returns an embedded file's text.
func Read(name string) (string, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("kernels: %w", err)
	}
	return string(b), nil
}

// Headers returns every .cuh header by name, for NVRTC's include list.
func Headers() map[string]string {
	out := map[string]string{}
	for _, f := range Files() {
		if strings.HasSuffix(f, ".cuh") {
			b, _ := files.ReadFile(f)
			out[f] = string(b)
		}
	}
	return out
}

var kernelRE = regexp.MustCompile(`extern\s+"C"\s+__global__\s+void\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

// KernelNames returns the extern "C" __global__ kernels declared in src, in order.
func KernelNames(src string) []string {
	var out []string
	for _, m := range kernelRE.FindAllStringSubmatch(src, -1) {
		out = append(out, m[1])
	}
	return out
}

// ModuleOf returns the .cu file that declares the fixed kernel name, or "" if none does.
func ModuleOf(name string) string {
	for _, f := range Modules() {
		src, _ := Read(f)
		for _, k := range KernelNames(src) {
			if k == name {
				return f
			}
		}
	}
	return ""
}

var sigRE = regexp.MustCompile(`extern\s+"C"\s+__global__\s+void\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(([^)]*)\)`)

// Param is one kernel parameter: its declaration and its size in bytes as a kernel argument
// (8 for pointers and 64-bit scalars, 4 for int, unsigned and float, 0 for anything else).
type Param struct {
	Decl string
	Size int
}

// Pointer reports whether the parameter is a pointer.
func (p Param) Pointer() bool { return strings.Contains(p.Decl, "*") }

// Float reports whether the parameter is a float.
func (p Param) Float() bool { return !p.Pointer() && strings.Fields(p.Decl)[0] == "float" }

// Signatures parses every extern "C" __global__ kernel's parameter list in src.
func Signatures(src string) map[string][]Param {
	out := map[string][]Param{}
	for _, m := range sigRE.FindAllStringSubmatch(src, -1) {
		ps := []Param{}
		for _, p := range strings.Split(m[2], ",") {
			p = strings.Join(strings.Fields(p), " ")
			if p == "" || p == "void" {
				continue
			}
			ps = append(ps, Param{Decl: p, Size: paramSize(p)})
		}
		out[m[1]] = ps
	}
	return out
}

func paramSize(decl string) int {
	if strings.Contains(decl, "*") {
		return 8
	}
	f := strings.Fields(strings.NewReplacer("const", " ", "__restrict__", " ").Replace(decl))
	if len(f) < 2 {
		return 0
	}
	switch strings.Join(f[:len(f)-1], " ") {
	case "int", "int32_t", "unsigned", "unsigned int", "uint32_t", "u32", "float":
		return 4
	case "long long", "int64_t", "unsigned long long", "uint64_t", "u64", "i64", "size_t", "double":
		return 8
	}
	return 0
}
