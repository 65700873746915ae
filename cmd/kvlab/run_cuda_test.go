package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/cuda/engine"
)

// TestRunCUDAWithoutDriver: without a driver, `kvlab run --device cuda` fails in one line
// naming it.
func TestRunCUDAWithoutDriver(t *testing.T) {
	path := fixtures.Path(t, "kvlab-tiny-64.gguf")
	t.Setenv("KVLAB_CUDA_DRIVER", filepath.Join(t.TempDir(), "libcuda.so.1"))
	if e, err := engine.Open(0); err == nil {
		e.Close()
		t.Skip("a CUDA driver was loaded earlier in this process")
	}
	_, _, err := execute(t, "run", "--model", path, "--device", "cuda", "--temp", "0", "--n", "4")
	if !errors.Is(err, cuda.ErrNoCUDA) || !strings.HasPrefix(err.Error(), "no CUDA driver found: ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line starting %q", err, "no CUDA driver found: ")
	}
}

// TestRunCUDARejects: a model the GPU forward pass does not cover (stories260K, head_dim 8)
// is refused in one line before the driver is loaded, and --device takes cpu or cuda only.
func TestRunCUDARejects(t *testing.T) {
	path := fixtures.Path(t, "stories260K.gguf")
	_, _, err := execute(t, "run", "--model", path, "--device", "cuda", "--temp", "0", "--n", "4")
	if !errors.Is(err, engine.ErrUnsupported) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want engine.ErrUnsupported in one line", err)
	}
	for _, want := range []string{"stories260K.gguf", "head dimension 8", "64, 128 and 256", "--device cpu"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, _, err := execute(t, "run", "--model", path, "--device", "tpu"); err == nil || !strings.Contains(err.Error(), "want cpu or cuda") {
		t.Errorf("--device tpu: %v", err)
	}
}

// TestServeCUDAWithoutDriver: without a driver, `kvlab serve --device cuda` refuses to start in
// one line naming it, before it listens; --device takes cpu or cuda only.
func TestServeCUDAWithoutDriver(t *testing.T) {
	t.Setenv("KVLAB_CUDA_DRIVER", filepath.Join(t.TempDir(), "libcuda.so.1"))
	if e, err := engine.Open(0); err == nil {
		e.Close()
		t.Skip("a CUDA driver was loaded earlier in this process")
	}
	out, _, err := execute(t, "serve", "--addr", "127.0.0.1:0", "--no-discover", "--data", t.TempDir(), "--device", "cuda")
	if !errors.Is(err, cuda.ErrNoCUDA) || !strings.HasPrefix(err.Error(), "no CUDA driver found: ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line starting %q", err, "no CUDA driver found: ")
	}
	if strings.Contains(out, "serving") {
		t.Errorf("the server started: %s", out)
	}
	if _, _, err := execute(t, "serve", "--addr", "127.0.0.1:0", "--no-discover", "--device", "tpu"); err == nil || !strings.Contains(err.Error(), "want cpu or cuda") {
		t.Errorf("--device tpu: %v", err)
	}
}

// TestABPPLCUDAWithoutDriver: without a driver, `kvlab ab --device cuda` and `kvlab ppl
// --device cuda` fail in one line naming it, and --device takes cpu or cuda only.
func TestABPPLCUDAWithoutDriver(t *testing.T) {
	path := fixtures.Path(t, "kvlab-tiny-64.gguf")
	text := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(text, []byte("Once upon a time there was a little dog."), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KVLAB_CUDA_DRIVER", filepath.Join(t.TempDir(), "libcuda.so.1"))
	if e, err := engine.Open(0); err == nil {
		e.Close()
		t.Skip("a CUDA driver was loaded earlier in this process")
	}
	for _, args := range [][]string{
		{"ab", "--model", path, "--arms", "q8_0", "--no-save", "--device", "cuda"},
		{"ppl", "--model", path, "--file", text, "--ctx", "8", "--device", "cuda"},
	} {
		t.Run(args[0], func(t *testing.T) {
			_, _, err := execute(t, args...)
			if !errors.Is(err, cuda.ErrNoCUDA) || !strings.HasPrefix(err.Error(), "no CUDA driver found: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line starting %q", err, "no CUDA driver found: ")
			}
			bad := append(append([]string(nil), args[:len(args)-1]...), "tpu")
			if _, _, err := execute(t, bad...); err == nil || !strings.Contains(err.Error(), "want cpu or cuda") {
				t.Errorf("--device tpu: %v", err)
			}
		})
	}
}
