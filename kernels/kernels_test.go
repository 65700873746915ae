package kernels

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestEveryKernelSourceIsEmbedded(t *testing.T) {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".cu") || strings.HasSuffix(n, ".cuh") {
			onDisk = append(onDisk, n)
		}
	}
	slices.Sort(onDisk)
	if got := Files(); !slices.Equal(got, onDisk) {
		t.Errorf("embedded %v, on disk %v", got, onDisk)
	}
	for _, f := range onDisk {
		want, _ := os.ReadFile(f)
		if got, _ := Read(f); got != string(want) {
			t.Errorf("%s: embedded text differs from the file", f)
		}
	}
}

func TestKernelsAreUniqueAndParse(t *testing.T) {
	seen := map[string]string{}
	for _, m := range Modules() {
		src, _ := Read(m)
		names := KernelNames(src)
		if len(names) == 0 {
			t.Errorf("%s declares no extern \"C\" __global__ kernel", m)
		}
		sigs := Signatures(src)
		for _, n := range names {
			if prev, dup := seen[n]; dup {
				t.Errorf("kernel %s in both %s and %s", n, prev, m)
			}
			seen[n] = m
			for _, p := range sigs[n] {
				if p.Size == 0 {
					t.Errorf("%s: %s: parameter %q has no known size", m, n, p.Decl)
				}
			}
			if ModuleOf(n) != m {
				t.Errorf("ModuleOf(%s) = %q, want %s", n, ModuleOf(n), m)
			}
		}
	}
	for _, want := range []string{"kv_write_f16", "kv_write_q8_0", "kv_write_q4_0", "kv_write_q5_1", "kv_write_fp8",
		"kv_write_tq4", "kv_write_q2k", "kv_combine", "tq4_rotate", "rmsnorm", "rope", "swiglu", "add", "mem_read",
		"matvec_f32_t1", "matvec_f16_t8", "matvec_q8_0_t1", "matvec_q4_0_t8", "embed_q8_0", "embed_q4_0"} {
		if _, ok := seen[want]; !ok {
			t.Errorf("no kernel %s", want)
		}
	}
}

// TestSourcesAreBalanced is a syntax smoke test for code this machine cannot compile with
// NVRTC: brackets balance outside comments, strings and character literals, and every
// module includes common.cuh. (The cudaemu tests compile everything with g++.)
func TestSourcesAreBalanced(t *testing.T) {
	for _, f := range Files() {
		src, _ := Read(f)
		var stack []byte
		pairs := map[byte]byte{')': '(', ']': '[', '}': '{'}
		line := 1
		for i := 0; i < len(src); i++ {
			c := src[i]
			switch {
			case c == '\n':
				line++
			case strings.HasPrefix(src[i:], "//"):
				for i < len(src) && src[i] != '\n' {
					i++
				}
				line++
			case strings.HasPrefix(src[i:], "/*"):
				end := strings.Index(src[i+2:], "*/")
				line += strings.Count(src[i:i+2+end], "\n")
				i += end + 3
			case c == '"' || c == '\'':
				for i++; i < len(src) && src[i] != c; i++ {
					if src[i] == '\\' {
						i++
					}
				}
			case c == '(' || c == '[' || c == '{':
				stack = append(stack, c)
			case c == ')' || c == ']' || c == '}':
				if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
					t.Fatalf("%s:%d: unbalanced %q", f, line, c)
				}
				stack = stack[:len(stack)-1]
			}
		}
		if len(stack) != 0 {
			t.Errorf("%s: %d unclosed brackets", f, len(stack))
		}
		if strings.HasSuffix(f, ".cu") && !strings.Contains(src, `#include "common.cuh"`) {
			t.Errorf("%s does not include common.cuh", f)
		}
	}
}

func TestSignatures(t *testing.T) {
	s := Signatures(`extern "C" __global__ void k(const float* __restrict__ q, u8* p, int n, float x, unsigned long long m, unsigned u) {}`)["k"]
	want := []int{8, 8, 4, 4, 8, 4}
	if len(s) != len(want) {
		t.Fatalf("%v", s)
	}
	for i, p := range s {
		if p.Size != want[i] {
			t.Errorf("%q: size %d, want %d", p.Decl, p.Size, want[i])
		}
	}
	if !s[0].Pointer() || s[2].Pointer() || !s[3].Float() || s[2].Float() {
		t.Error("Pointer/Float")
	}
}
