package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// run executes the CLI in-process and returns stdout and the error.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestFormatsJSONExactBytes(t *testing.T) {
	out, err := run(t, "formats", "--head-dim", "128", "--kv-heads", "8", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Formats []formatRow `json:"formats"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		block int
		cell  float64
	}{
		"q8_0": {34, 2 * 8 * 136}, "q4_0": {18, 2 * 8 * 72}, "q5_1": {24, 2 * 8 * 96},
		"f16": {64, 2 * 8 * 256}, "q8_0/q4_0": {34, 8 * (136 + 72)},
	}
	seen := 0
	for _, r := range doc.Formats {
		w, ok := want[r.Format]
		if !ok {
			continue
		}
		seen++
		if r.KBlockBytes != w.block || r.BytesPerCell != w.cell {
			t.Errorf("%s: %d B per 32 values, %g B/cell; want %d and %g", r.Format, r.KBlockBytes, r.BytesPerCell, w.block, w.cell)
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of %d expected formats", seen, len(want))
	}
}

func TestFormatsRejectsSmallHeadDim(t *testing.T) {
	if _, err := run(t, "formats", "--head-dim", "4"); err == nil || !strings.Contains(err.Error(), "head-dim") {
		t.Errorf("got %v", err)
	}
}

func TestGateSmall(t *testing.T) {
	out, err := run(t, "gate", "--formats", "f16,q8_0/q4_0,q2k,tq4", "--head-dims", "16", "--cells", "128", "--queries", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"q8_0/q4_0", "q2k", "tq4", "ok ("} {
		if !strings.Contains(out, s) {
			t.Errorf("gate output lacks %q:\n%s", s, out)
		}
	}
}

func TestGateRejectsUnknownFormat(t *testing.T) {
	_, err := run(t, "gate", "--formats", "q3_0")
	if err == nil || !strings.Contains(err.Error(), "q8_0") {
		t.Errorf("want an error listing the valid formats, got %v", err)
	}
}
