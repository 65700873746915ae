//go:build cudaemu

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/fixtures"
)

// TestServeCUDAEmu runs `kvlab serve --device cuda` on the CPU emulator of the driver and NVRTC
// (kernels/emu) with kvlab-tiny-64 and requires the CPU server's greedy /v1/completions text,
// for two prompts in turn (the second resets the first's device cache, which cannot truncate).
// Both use the unrotated pair: the device stores ggml's formats unrotated, and the CPU's
// rotated V chooses its rotation per store, so only the unrotated pair holds the same bytes.
// The driver is loaded once per process, so run it alone:
//
//	go test -tags cudaemu -run ServeCUDAEmu -v ./cmd/kvlab/
func TestServeCUDAEmu(t *testing.T) {
	path := fixtures.Path(t, "kvlab-tiny-64.gguf")
	useEmulator(t)
	prompts := []string{"Once upon a time", "The little dog"}
	texts := func(device string) ([]string, []string, string) {
		base, stop := serveInProcess(t, "serve", "--addr", "127.0.0.1:0", "--model", path, "--data", t.TempDir(),
			"--device", device, "--kv", "q8_0-r/q4_0-r", "--ctx", "256", "--max-concurrent", "1")
		defer stop()
		var out, devices []string
		for _, p := range prompts {
			body, _ := json.Marshal(map[string]any{"prompt": p, "max_tokens": 32, "temperature": 0})
			r, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(string(body)))
			if err != nil {
				t.Fatal(err)
			}
			var res struct {
				Choices []struct{ Text string }
				KVLab   struct{ Device string } `json:"kvlab"`
			}
			err = json.NewDecoder(r.Body).Decode(&res)
			r.Body.Close()
			if err != nil || r.StatusCode != http.StatusOK || len(res.Choices) != 1 {
				t.Fatalf("%s: status %d, %v, %+v", device, r.StatusCode, err, res)
			}
			out = append(out, res.Choices[0].Text)
			devices = append(devices, res.KVLab.Device)
		}
		r, err := http.Get(base + "/api/system")
		if err != nil {
			t.Fatal(err)
		}
		var si struct{ Device string }
		json.NewDecoder(r.Body).Decode(&si)
		r.Body.Close()
		return out, devices, si.Device
	}
	cpuText, _, _ := texts("cpu")
	gpuText, gpuDevices, gpuSystem := texts("cuda")
	for i := range prompts {
		if gpuText[i] != cpuText[i] {
			t.Errorf("prompt %q: --device cuda answered\n%q\nthe CPU\n%q", prompts[i], gpuText[i], cpuText[i])
		}
		if !strings.HasPrefix(gpuDevices[i], "cuda: ") {
			t.Errorf("kvlab.device %q, want cuda: …", gpuDevices[i])
		}
		t.Logf("%q → %q", prompts[i], gpuText[i])
	}
	if !strings.Contains(gpuSystem, "cuda: ") {
		t.Errorf("/api/system device %q", gpuSystem)
	}
}

// serveInProcess runs kvlab with args (a serve command) in-process until the returned stop is
// called, and returns the server's base URL.
func serveInProcess(t *testing.T, args ...string) (base string, stop func()) {
	t.Helper()
	cmd := newRootCmd()
	pr, pw := io.Pipe()
	cmd.SetOut(pw)
	var errOut strings.Builder
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cmd.ExecuteContext(ctx)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "kvlab: serving "); ok {
			base = strings.TrimSuffix(strings.Fields(u)[0], "/")
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if base == "" {
		cancel()
		t.Fatalf("no banner: %v; stderr: %s", <-done, errOut.String())
	}
	return base, func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}
}
