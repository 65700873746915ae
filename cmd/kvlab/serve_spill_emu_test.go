//go:build cudaemu

package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestServeSpillCUDAEmu runs `kvlab serve --device cuda --kv-resident 32` on the CPU emulator
// with chunks of 32 cells and requires the all-GPU server's greedy /v1/completions text for
// two prompts in turn (the second resets the first's cache, which makes a new tail). Run it
// alone (the driver is loaded once per process):
//
//	go test -tags cudaemu -run ServeSpillCUDAEmu -v ./cmd/kvlab/
func TestServeSpillCUDAEmu(t *testing.T) {
	path := useSpillEmulator(t)
	prompts := []string{"Once upon a time", "The little dog"}
	texts := func(extra ...string) (out []string, kvBytes int64) {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--model", path, "--data", t.TempDir(),
			"--device", "cuda", "--kv", "q8_0/q4_0", "--ctx", "256", "--max-concurrent", "1"}, extra...)
		base, stop := serveInProcess(t, args...)
		defer stop()
		for _, p := range prompts {
			body, _ := json.Marshal(map[string]any{"prompt": p, "max_tokens": 96, "temperature": 0})
			r, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(string(body)))
			if err != nil {
				t.Fatal(err)
			}
			var res struct {
				Choices []struct{ Text string }
				Usage   struct {
					CompletionTokens int `json:"completion_tokens"`
				}
				KVLab struct {
					KVBytes int64 `json:"kv_bytes"`
				} `json:"kvlab"`
			}
			err = json.NewDecoder(r.Body).Decode(&res)
			r.Body.Close()
			if err != nil || r.StatusCode != http.StatusOK || len(res.Choices) != 1 {
				t.Fatalf("%v: status %d, %v, %+v", extra, r.StatusCode, err, res)
			}
			if res.Usage.CompletionTokens < 64 {
				t.Fatalf("%v: %d tokens: too few to reach the tail", extra, res.Usage.CompletionTokens)
			}
			out = append(out, res.Choices[0].Text)
			kvBytes = res.KVLab.KVBytes
		}
		if len(extra) > 0 {
			// A lab A/B arm with the FP16 overlay over the tail is refused before it runs,
			// naming the conflict and the flag (not the device cache's error).
			r, err := http.Post(base+"/api/ab", "application/json", strings.NewReader(`{"model":"kvlab-tiny-64","prompt":"Once upon a time","arms":["q4_0+w16"],"n":40}`))
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				Error struct{ Message, Param string }
			}
			err = json.NewDecoder(r.Body).Decode(&e)
			r.Body.Close()
			if err != nil || r.StatusCode != http.StatusBadRequest || e.Error.Param != "arms" || !strings.Contains(e.Error.Message, "(serve --kv-resident 32), and that host-spill tail takes no FP16 overlay (window 16, sinks 0)") {
				t.Errorf("A/B arm q4_0+w16 over the tail: status %d, %v, %+v", r.StatusCode, err, e)
			}
		}
		return out, kvBytes
	}
	all, allBytes := texts()
	spilled, spilledBytes := texts("--kv-resident", "32")
	// The GPU holds 32 resident cells and a chunk of 32 of each cache, not 256.
	if spilledBytes <= 0 || spilledBytes*2 > allBytes {
		t.Errorf("--kv-resident 32: %d bytes of KV on the GPU, all on the GPU %d", spilledBytes, allBytes)
	}
	for i := range prompts {
		if spilled[i] != all[i] {
			t.Errorf("prompt %q: --kv-resident 32 answered\n%q\nall on the GPU\n%q", prompts[i], spilled[i], all[i])
		}
		t.Logf("%q → %q", prompts[i], spilled[i])
	}
	// The tail's limits are errors before the server starts.
	_, _, err := execute(t, "serve", "--addr", "127.0.0.1:0", "--model", path, "--device", "cuda", "--kv-resident", "32", "--kv-window", "16")
	if err == nil || !strings.Contains(err.Error(), "no FP16 overlay") {
		t.Errorf("--kv-window with --kv-resident: %v", err)
	}
}
