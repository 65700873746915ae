package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
)

func runIDs(t *testing.T, args ...string) (runResult, string) {
	t.Helper()
	out, errOut, err := execute(t, append([]string{"run", "--temp", "0", "--threads", "1", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var res runResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, out)
	}
	return res, errOut
}

// TestRunSnapshotContinues: a greedy generation continued from a --save-kv snapshot equals the
// uninterrupted one token for token, in f16, a quantized pair and the mixed cache.
func TestRunSnapshotContinues(t *testing.T) {
	for _, fx := range []string{"kvlab-tiny-64.gguf", "stories260K.gguf"} {
		path := fixtures.Path(t, fx)
		for _, kv := range [][]string{{"--kv", "f16"}, {"--kv", "q8_0/q4_0"}, {"--kv", "q4_0", "--kv-recent", "16", "--kv-sink", "2"}} {
			t.Run(fx+" "+strings.Join(kv, " "), func(t *testing.T) {
				common := append([]string{"--model", path, "--prompt", "Once upon a time", "--ctx", "96"}, kv...)
				whole, _ := runIDs(t, append(common, "--n", "50")...)
				snap := filepath.Join(t.TempDir(), "seq.kv")
				first, _ := runIDs(t, append(common, "--n", "25", "--save-kv", snap)...)
				rest, _ := runIDs(t, append([]string{"--model", path, "--ctx", "96", "--n", "25", "--load-kv", snap}, kv...)...)
				if rest.LoadedCells != len(first.PromptIDs)+25 {
					t.Errorf("loaded %d cells, want %d", rest.LoadedCells, len(first.PromptIDs)+25)
				}
				got := append(slices.Clone(first.IDs), rest.IDs...)
				if !slices.Equal(got, whole.IDs) {
					t.Fatalf("continued from the snapshot:\n%v\nuninterrupted:\n%v", got, whole.IDs)
				}
			})
		}
	}
}

// TestRunSnapshotBadFiles: a snapshot of another pair is re-encoded; a corrupt one or one of
// another model is reported and the run starts clean.
func TestRunSnapshotBadFiles(t *testing.T) {
	tiny, stories := fixtures.Path(t, "kvlab-tiny-64.gguf"), fixtures.Path(t, "stories260K.gguf")
	snap := filepath.Join(t.TempDir(), "seq.kv")
	runIDs(t, "--model", tiny, "--prompt", "Once upon a time", "--n", "10", "--kv", "q8_0", "--save-kv", snap)
	res, errOut := runIDs(t, "--model", tiny, "--n", "5", "--kv", "q4_0", "--load-kv", snap)
	if res.LoadedCells == 0 || !strings.Contains(errOut, "re-encoded from version 2, q8_0 into q4_0") {
		t.Errorf("another pair: loaded %d cells, stderr %q", res.LoadedCells, errOut)
	}
	res, errOut = runIDs(t, "--model", stories, "--n", "5", "--load-kv", snap)
	if res.LoadedCells != 0 || !strings.Contains(errOut, "another model") || !strings.Contains(errOut, "starting clean") || len(res.IDs) == 0 {
		t.Errorf("another model: loaded %d cells, %d tokens, stderr %q", res.LoadedCells, len(res.IDs), errOut)
	}
	b, _ := os.ReadFile(snap)
	b[len(b)-10] ^= 1
	os.WriteFile(snap, b, 0o644)
	res, errOut = runIDs(t, "--model", tiny, "--n", "5", "--kv", "q8_0", "--load-kv", snap)
	if res.LoadedCells != 0 || !strings.Contains(errOut, "corrupt") || !strings.Contains(errOut, "starting clean") || len(res.IDs) == 0 {
		t.Errorf("corrupt: loaded %d cells, %d tokens, stderr %q", res.LoadedCells, len(res.IDs), errOut)
	}
}
