package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/internal/history"
)

func TestABStoresAndShowsRuns(t *testing.T) {
	modelPath := fixtures.Path(t, "kvlab-tiny-64.gguf")
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	csvPath := filepath.Join(dir, "ab.csv")
	out, err := run(t, "ab", "--model", modelPath, "--arms", "f16,q8_0,q4_0+w16+s4", "--ctx", "128", "--n", "6",
		"--needle-trials", "1", "--threads", "1", "--db", db, "--csv", csvPath, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var doc abOutput
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("ab --json: %v\n%s", err, out)
	}
	if doc.ID <= 0 || doc.DB != db || len(doc.SHA256) != 64 || doc.ABReport == nil {
		t.Fatalf("ab --json: id %d db %q sha %q", doc.ID, doc.DB, doc.SHA256)
	}
	if !doc.Determ.Identical || len(doc.Arms) != 3 || doc.Arms[0].Decode.KLMean != 0 || doc.Arms[2].Window != 16 {
		t.Errorf("report: determinism %+v, arms %+v", doc.Determ, doc.Arms)
	}

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 4 || rows[0][0] != "arm" || rows[3][0] != "q4_0+w16+s4" || len(rows[1]) != len(abCSVHeader) {
		t.Errorf("CSV: %v, %v", rows, err)
	}

	out, err = run(t, "runs", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "complete") || !strings.Contains(out, "kvlab-tiny-64.gguf") || !strings.Contains(out, "f16,q8_0,q4_0+w16+s4") {
		t.Errorf("runs:\n%s", out)
	}
	out, err = run(t, "runs", "show", strconv.FormatInt(doc.ID, 10), "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"q4_0+w16+s4", "bit-identical", "decode KL", doc.SHA256} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, "runs", "show", strconv.FormatInt(doc.ID, 10), "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var again abOutput
	if err := json.Unmarshal([]byte(out), &again); err != nil || again.Status != history.Complete ||
		again.Arms[1].Decode.KLMean != doc.Arms[1].Decode.KLMean {
		t.Errorf("runs show --json: %v\n%s", err, out)
	}
	if _, err := run(t, "runs", "show", "99", "--db", db); err == nil {
		t.Error("runs show of a missing run succeeded")
	}
}

func TestABRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"ab"},
		{"ab", "--model", "x.gguf", "--arms", "q9_0"},
		{"ab", "--model", "x.gguf", "--text", "a", "--prompt", "b"},
		{"ab", "--model", "x.gguf", "--k-gain", "0"},
		{"ab", "--model", "x.gguf", "--n", "-1"},
		{"ab", "--model", filepath.Join(t.TempDir(), "missing.gguf"), "--no-save"},
	} {
		if _, err := run(t, args...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

// childArgs names the environment variable that makes TestHelperCLIChild run the CLI with
// these arguments (JSON-encoded): a kvlab process the test can kill.
const childArgs = "KVLAB_TEST_CLI_ARGS"

func TestHelperCLIChild(t *testing.T) {
	enc := os.Getenv(childArgs)
	if enc == "" {
		t.Skip("runs only as a child process")
	}
	var args []string
	if err := json.Unmarshal([]byte(enc), &args); err != nil {
		t.Fatal(err)
	}
	cmd := newRootCmd()
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
}

// TestABKilledMidRunLeavesHistoryReadable kills a `kvlab ab` process while it measures and
// checks that the history still opens, holds the earlier run intact and lists the killed one
// as running.
func TestABKilledMidRunLeavesHistoryReadable(t *testing.T) {
	if os.Getenv(childArgs) != "" {
		t.Skip("child process")
	}
	modelPath := fixtures.Path(t, "stories260K.gguf")
	db := filepath.Join(t.TempDir(), "runs.db")
	if _, err := run(t, "ab", "--model", modelPath, "--arms", "q8_0", "--ctx", "64", "--n", "4", "--no-needle",
		"--threads", "1", "--db", db); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{"ab", "--model", modelPath, "--threads", "1", "--db", db})
	child := exec.Command(os.Args[0], "-test.run=^TestHelperCLIChild$")
	child.Env = append(os.Environ(), childArgs+"="+string(args))
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h, err := history.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		list, err := h.List(ctx, history.ListOptions{})
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 2 && list[0].Status == history.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child never began its run: %+v", list)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // well into the measurements
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	out, err := run(t, "runs", "--db", db, "--json")
	if err != nil {
		t.Fatalf("runs after a kill: %v", err)
	}
	var doc struct {
		Runs []history.Summary `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Runs) != 2 || doc.Runs[0].Status != history.Running || doc.Runs[1].Status != history.Complete {
		t.Fatalf("after the kill: %+v", doc.Runs)
	}
	out, err = run(t, "runs", "show", strconv.FormatInt(doc.Runs[1].ID, 10), "--db", db)
	if err != nil || !strings.Contains(out, "q8_0") {
		t.Errorf("the earlier run: %v\n%s", err, out)
	}
	out, err = run(t, "runs", "show", strconv.FormatInt(doc.Runs[0].ID, 10), "--db", db)
	if err != nil || !strings.Contains(out, "did not finish") {
		t.Errorf("the killed run: %v\n%s", err, out)
	}
}
