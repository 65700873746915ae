package main

import (
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
)

// TestRunsExport: kvlab runs export writes one CSV row per run and arm, or one JSON document.
func TestRunsExport(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	if out, err := runKvlab(t, "ab", "--model", fixtures.Path(t, "stories260K.gguf"), "--arms", "q8_0,q4_0", "--n", "8", "--no-needle", "--db", db); err != nil {
		t.Fatalf("kvlab ab: %v\n%s", err, out)
	}
	out, err := runKvlab(t, "runs", "export", "--csv", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0][0] != "run" || rows[1][0] != "1" || rows[1][3] != "stories260K" || rows[2][5] != "q4_0" {
		t.Errorf("csv %q", rows)
	}
	out, err = runKvlab(t, "runs", "export", "--json", "--db", db, "--id", "1")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			ID     int64
			Report struct{ Arms []struct{ Arm string } }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Runs) != 1 || len(doc.Runs[0].Report.Arms) != 2 {
		t.Errorf("json %v: %s", err, out[:min(len(out), 300)])
	}
	if _, err := runKvlab(t, "runs", "export", "--db", db); err == nil {
		t.Error("export without a format did not fail")
	}
}
