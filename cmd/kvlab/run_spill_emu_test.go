//go:build cudaemu

package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestRunSpillCUDAEmu runs `kvlab run --device cuda --kv-resident N` on the CPU emulator and
// requires the all-GPU run's greedy tokens: the tail attends to the same stored bytes and
// differs only in where the attention's splits fall (float32 summation order), which does
// not move kvlab-tiny-64's argmax here. Chunks of 32 cells (spillChunk) make a short run
// move chunks to host memory: with 32 resident cells the prompt's positions past them run
// through the tail's one-query path, with 64 the prompt fits and the decode crosses. Run it
// alone (the driver is loaded once per process):
//
//	go test -tags cudaemu -run RunSpillCUDAEmu -v ./cmd/kvlab/
func TestRunSpillCUDAEmu(t *testing.T) {
	path := useSpillEmulator(t)
	const prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. One day, she saw a big red ball"
	run := func(kv string, extra ...string) runResult {
		t.Helper()
		args := append([]string{"run", "--model", path, "--prompt", prompt, "--temp", "0", "--n", "96", "--kv", kv, "--device", "cuda", "--json"}, extra...)
		out, errOut, err := execute(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", extra, err, errOut)
		}
		var res runResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, kv := range []string{"f16", "q8_0/q4_0"} {
		t.Run(strings.ReplaceAll(kv, "/", "-"), func(t *testing.T) {
			all := run(kv)
			if all.KVResident != 0 || len(all.IDs) != 96 {
				t.Fatalf("all-GPU run: kv_resident %d, %d tokens", all.KVResident, len(all.IDs))
			}
			if all.PromptTokens <= 32 || all.PromptTokens >= 64 {
				t.Fatalf("the prompt is %d tokens: the test wants 32 < prompt < 64", all.PromptTokens)
			}
			for _, resident := range []int{32, 64} {
				got := run(kv, "--kv-resident", fmt.Sprint(resident))
				if got.KVResident != resident {
					t.Errorf("--kv-resident %d: kv_resident %d", resident, got.KVResident)
				}
				// The GPU holds the resident cells and one chunk of 32: less than all.
				if got.KVBytes >= all.KVBytes {
					t.Errorf("--kv-resident %d: %d bytes on the GPU, all on the GPU %d", resident, got.KVBytes, all.KVBytes)
				}
				if !slices.Equal(got.IDs, all.IDs) {
					t.Errorf("--kv-resident %d: tokens\n%v\nall on the GPU\n%v", resident, got.IDs, all.IDs)
				}
				if got.Text != all.Text {
					t.Errorf("--kv-resident %d: text %q, all on the GPU %q", resident, got.Text, all.Text)
				}
			}
			t.Logf("%s: %d prompt tokens, %q", kv, all.PromptTokens, all.Text)
		})
	}
	// Without --json the tail is reported on stderr; a --kv-resident past the context is no tail.
	_, errOut, err := execute(t, "run", "--model", path, "--temp", "0", "--n", "40", "--device", "cuda", "--kv-resident", "20")
	if err != nil {
		t.Fatal(err)
	}
	if want := "KV cells past 32 in pinned host memory"; !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
	out, errOut, err := execute(t, "run", "--model", path, "--temp", "0", "--n", "40", "--device", "cuda", "--kv-resident", "4096", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res runResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.KVResident != 0 || strings.Contains(errOut, "host-spill") {
		t.Errorf("--kv-resident past the context: %v, kv_resident %d, stderr %s", err, res.KVResident, errOut)
	}
	// The tail's limits are flag errors, not panics.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kv-window", "16"}, "no FP16 overlay"},
		{[]string{"--kv-sink", "4"}, "no FP16 overlay"},
		{[]string{"--kv-recent", "16"}, "no --kv-recent"},
	} {
		args := append([]string{"run", "--model", path, "--temp", "0", "--n", "8", "--device", "cuda", "--kv-resident", "32"}, c.args...)
		if _, _, err := execute(t, args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
