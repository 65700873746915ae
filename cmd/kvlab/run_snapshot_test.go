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

// TestABKVDump: the gate runs on a dumped cache; f16 reproduces an f16 dump, q4_0 does not, and a
// dump of another model is refused by name.
func TestABKVDump(t *testing.T) {
	tiny, stories := fixtures.Path(t, "kvlab-tiny-64.gguf"), fixtures.Path(t, "stories260K.gguf")
	dump := filepath.Join(t.TempDir(), "dump.kv")
	runIDs(t, "--model", tiny, "--prompt", "Once upon a time", "--n", "60", "--kv", "f16", "--save-kv", dump)
	out, errOut, err := execute(t, "ab", "--model", tiny, "--kv-dump", dump, "--arms", "f16,q4_0,q4_0+p16+s2", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var res dumpGateOutput
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Cells < 60 || len(res.Arms) != 3 || len(res.Arms[0].Layers) != 4 {
		t.Fatalf("result %+v", res)
	}
	if f16, q4 := res.Arms[0].Mean, res.Arms[1].Mean; f16 > 1e-4 || q4 < 1e-3 || q4 > 0.5 {
		t.Errorf("attention error f16 %g, q4_0 %g: want ~0 and a 4-bit error", f16, q4)
	}
	if _, _, err := execute(t, "ab", "--model", stories, "--kv-dump", dump); err == nil || !strings.Contains(err.Error(), "another model") {
		t.Errorf("a dump of another model: %v", err)
	}
}
