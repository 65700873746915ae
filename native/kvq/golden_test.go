package kvq

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites the golden files under testdata/golden instead of comparing against them:
// go test ./native/kvq/ -run Golden -update
var update = flag.Bool("update", false, "rewrite testdata/golden files")

// checkGolden compares got with the golden file testdata/golden/<name>, or writes it under
// -update. A name ending in ".hex" stores got as a hex dump (32 bytes per line) so that diffs are
// readable; any other name stores got verbatim.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", filepath.FromSlash(name))
	isHex := strings.HasSuffix(name, ".hex")
	if *update {
		data := got
		if isHex {
			data = goldenHexDump(got)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update to create it)", name, err)
	}
	want := data
	if isHex {
		want, err = hex.DecodeString(strings.Join(strings.Fields(string(data)), ""))
		if err != nil {
			t.Fatalf("golden %s: %v", name, err)
		}
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Errorf("golden %s: got %d bytes, want %d; first difference at byte %d (run with -update if the change is intended)",
			name, len(got), len(want), i)
	}
}

func goldenHexDump(b []byte) []byte {
	var sb strings.Builder
	for len(b) > 0 {
		n := min(32, len(b))
		sb.WriteString(hex.EncodeToString(b[:n]))
		sb.WriteByte('\n')
		b = b[n:]
	}
	return []byte(sb.String())
}
