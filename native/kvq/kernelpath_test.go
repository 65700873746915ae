package kvq

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestKernelWarning checks that KernelWarning is empty exactly when both halves of a pair have
// a fast path, names the half that lacks one in one line, and that FastDecode agrees with the
// codecs: a format with a fast path at d implements MultiQuery (or is q2k).
func TestKernelWarning(t *testing.T) {
	for _, f := range Formats() {
		for _, d := range []int{8, 16, 64, 128, 200} {
			if !FastDecode(f, d) || f == Q2K {
				continue
			}
			c, err := NewCodec(f, d, CodecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := c.(MultiQuery); !ok {
				t.Errorf("%s d%d: FastDecode says yes, the codec has no MultiQuery", f, d)
			}
		}
	}
	if w := KernelWarning(Pair{K: F32, V: F32}, 128, 128); !strings.Contains(w, "f32") || strings.Contains(w, "\n") {
		t.Errorf("f32: %q", w)
	}
	for _, p := range []Pair{{K: F16, V: F16}, {K: Q8_0, V: Q4_0}, {K: Q5_1, V: IQ4_NL}, {K: Q2K, V: Q4_0}} {
		w := KernelWarning(p, 128, 128)
		if fast := FastDecode(p.K, 128) && FastDecode(p.V, 128); fast != (w == "") {
			t.Errorf("%s: fast %v, warning %q", p, fast, w)
		}
	}
	if !FastDecode(F16, 128) && runtime.GOARCH == "arm64" {
		if w := KernelWarning(Pair{K: Turbo2, V: Turbo3}, 128, 128); !strings.Contains(w, "purego") {
			t.Errorf("arm64 without kernels: %q does not name the purego build", w)
		}
	}
	if FastDecode(F16, 128) {
		if w := KernelWarning(Pair{K: F16, V: Q5_0}, 128, 16); !strings.Contains(w, "V (q5_0) has no fast decode kernel at head_dim 16") {
			t.Errorf("q5_0 V at head_dim 16: %q", w)
		}
	}
}

// TestKernelISA checks that the named instruction sets follow the switches: KVLAB_NO_AVX512
// names AVX2, never AVX-512; KVLAB_NO_AVX512VNNI neither VNNI nor VBMI (unless AVX-VNNI),
// KVLAB_NO_AVX512VBMI no VBMI; a purego or kernel-less build names Go.
func TestKernelISA(t *testing.T) {
	isa := KernelISA()
	if isa == "" {
		t.Fatal("KernelISA is empty")
	}
	if multiF16 == nil && isa != "Go" {
		t.Fatalf("no kernels here, KernelISA %q", isa)
	}
	if os.Getenv("KVLAB_NO_AVX512") != "" && strings.Contains(isa, "AVX-512") {
		t.Fatalf("KVLAB_NO_AVX512 set, KernelISA %q", isa)
	}
	if os.Getenv("KVLAB_NO_ZEN4") != "" && strings.Contains(isa, "Zen 4") {
		t.Fatalf("KVLAB_NO_ZEN4 set, KernelISA %q", isa)
	}
	if os.Getenv("KVLAB_NO_AVXVNNI") != "" && strings.Contains(isa, "AVX-VNNI") {
		t.Fatalf("KVLAB_NO_AVXVNNI set, KernelISA %q", isa)
	}
	if os.Getenv("KVLAB_NO_AVX512VNNI") != "" && (strings.Contains(isa, "VNNI") || strings.Contains(isa, "VBMI")) &&
		os.Getenv("KVLAB_NO_AVX512") == "" {
		t.Fatalf("KVLAB_NO_AVX512VNNI set, KernelISA %q", isa)
	}
	if os.Getenv("KVLAB_NO_AVX512VBMI") != "" && (strings.Contains(isa, "VBMI") || strings.Contains(isa, "BITALG") ||
		strings.Contains(isa, "GFNI") || strings.Contains(isa, "BF16")) {
		t.Fatalf("KVLAB_NO_AVX512VBMI set, KernelISA %q", isa)
	}
	if os.Getenv("KVLAB_NO_AVX512BF16") != "" && strings.Contains(isa, "BF16") {
		t.Fatalf("KVLAB_NO_AVX512BF16 set, KernelISA %q", isa)
	}
	if os.Getenv("KVLAB_NO_AMX") != "" && strings.Contains(isa, "AMX") {
		t.Fatalf("KVLAB_NO_AMX set, KernelISA %q", isa)
	}
}
