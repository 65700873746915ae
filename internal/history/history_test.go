package history

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/report"
)

func testReport(arms ...string) *report.ABReport {
	rep := &report.ABReport{
		Model:       report.ModelInfo{Arch: "llama", Layers: 4, Heads: 2, KVHeads: 1, HeadDimK: 64, HeadDimV: 64, Vocab: 512},
		Settings:    report.ABSettings{Arms: arms, Ctx: 256, N: 8, PromptTokens: 248},
		Ref:         report.RefResult{PPL: 8.74, DecodePPL: 4.2},
		Determ:      report.Determinism{Identical: true, Rows: 256},
		QuerySource: "key-proxy",
	}
	for i, a := range arms {
		rep.Arms = append(rep.Arms, report.ArmResult{Arm: a, Pair: a,
			Decode:  report.Series{KLMean: 0.01 * float64(i), KLP99: 0.05, Top1: 0.9, Positions: 2, KL: []float64{0, 0.02 * float64(i)}, Agree: []bool{true, false}},
			Prompt:  report.Series{KLMean: 0.02, Top1: 0.95},
			PPL:     8.7 + float64(i),
			AttnErr: []float64{0.01, 0.02}, AttnErrMean: 0.015,
			Needle:  report.NeedleResult{OK: 3, Total: 3},
			KVBytes: 1 << 20, BytesPerToken: 288})
	}
	return rep
}

func openTemp(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sub", "runs.db")
	d, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, path
}

func TestSaveGetList(t *testing.T) {
	ctx := context.Background()
	d, path := openTemp(t)
	run := &Run{Model: ModelRef{Path: "/m/tiny.gguf", Name: "tiny.gguf", SHA256: "abc", Bytes: 42},
		Machine: ThisMachine("test"), Config: json.RawMessage(`{"arms":"f16,q4_0"}`),
		Report: testReport("f16", "q4_0"), Started: time.Now().Add(-time.Second)}
	id, err := d.Save(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != Complete || got.Model != run.Model || got.Kind != "ab" {
		t.Errorf("stored run %+v, want complete with model %+v", got, run.Model)
	}
	if !reflect.DeepEqual(got.Report, run.Report) {
		t.Errorf("report did not round-trip:\n got %+v\nwant %+v", got.Report, run.Report)
	}
	if !reflect.DeepEqual(got.Machine, run.Machine) {
		t.Errorf("machine %+v, want %+v", got.Machine, run.Machine)
	}
	var n int
	if err := d.db.QueryRow("SELECT count(*) FROM arm_results WHERE run_id = ?", id).Scan(&n); err != nil || n != 2 {
		t.Errorf("arm_results rows: %d (%v), want 2", n, err)
	}

	// Persists across a reopen, newest first in the list.
	d.Close()
	d2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	id2, err := d2.Begin(ctx, &Run{Model: ModelRef{Name: "other.gguf"}, Config: json.RawMessage(`{"arms":"q8_0,q2k"}`)})
	if err != nil {
		t.Fatal(err)
	}
	list, err := d2.List(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != id2 || list[1].ID != id {
		t.Fatalf("list %+v, want runs %d then %d", list, id2, id)
	}
	if list[0].Status != Running || !reflect.DeepEqual(list[0].Arms, []string{"q8_0", "q2k"}) {
		t.Errorf("running run listed as %+v", list[0])
	}
	if list[1].Status != Complete || !reflect.DeepEqual(list[1].Arms, []string{"f16", "q4_0"}) || list[1].SHA256 != "abc" {
		t.Errorf("complete run listed as %+v", list[1])
	}
	if l, _ := d2.List(ctx, ListOptions{Limit: 1}); len(l) != 1 {
		t.Errorf("limit 1 listed %d runs", len(l))
	}
}

func TestBeginFinishFail(t *testing.T) {
	ctx := context.Background()
	d, _ := openTemp(t)
	a, err := d.Begin(ctx, &Run{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Begin(ctx, &Run{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(ctx, a, testReport("q8_0")); err != nil {
		t.Fatal(err)
	}
	if err := d.Fail(ctx, b, errors.New("model: boom")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id     int64
		status Status
		report bool
		err    string
	}{{a, Complete, true, ""}, {b, Failed, false, "model: boom"}} {
		r, err := d.Get(ctx, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != tc.status || (r.Report != nil) != tc.report || r.Error != tc.err || r.Finished.IsZero() {
			t.Errorf("run %d: %+v, want %s", tc.id, r, tc.status)
		}
	}
	// A finished run cannot be finished or failed again; unknown ids are ErrNotFound.
	if err := d.Finish(ctx, a, testReport("q8_0")); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Finish: %v", err)
	}
	if err := d.Fail(ctx, a, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("Fail of a complete run: %v", err)
	}
	if _, err := d.Get(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(999): %v", err)
	}
}

func TestOpenRejectsForeignFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (x TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	newer := filepath.Join(dir, "newer.db")
	db, _ = sql.Open("sqlite", newer)
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for name, path := range map[string]string{"garbage": garbage, "other schema": other, "newer version": newer} {
		t.Run(name, func(t *testing.T) {
			d, err := Open(ctx, path)
			if err == nil {
				d.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	_, path := openTemp(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 4; w++ {
		wg.Go(func() {
			d, err := Open(ctx, path)
			if err != nil {
				errs <- err
				return
			}
			defer d.Close()
			for i := 0; i < 5; i++ {
				if _, err := d.Save(ctx, &Run{Report: testReport("q4_0")}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if l, _ := d.List(ctx, ListOptions{}); len(l) != 20 {
		t.Errorf("%d runs stored, want 20", len(l))
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv(EnvDB, "/tmp/x/runs.db")
	if p, err := DefaultPath(); err != nil || p != "/tmp/x/runs.db" {
		t.Errorf("with %s set: %q, %v", EnvDB, p, err)
	}
	t.Setenv(EnvDB, "")
	t.Setenv("XDG_CONFIG_HOME", "/tmp/cfg")
	t.Setenv("HOME", "/tmp/home")
	p, err := DefaultPath()
	if err != nil || filepath.Base(p) != "runs.db" || filepath.Base(filepath.Dir(p)) != "kvlab" {
		t.Errorf("default path %q, %v", p, err)
	}
}

// The killed-writer test runs this test binary again as a child that holds a transaction open
// when the parent kills it.
const childEnv = "KVLAB_HISTORY_CHILD"

func TestKilledWriterLeavesDatabaseReadable(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("child process")
	}
	ctx := context.Background()
	d, path := openTemp(t)
	done, err := d.Save(ctx, &Run{Model: ModelRef{Name: "before.gguf"}, Report: testReport("f16", "q4_0")})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChildWriter$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "IN-TRANSACTION") {
			ready = true
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !ready {
		t.Fatal("the child never reached its open transaction")
	}

	d, err = Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen after a killed writer: %v", err)
	}
	defer d.Close()
	var check string
	if err := d.db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q, %v", check, err)
	}
	r, err := d.Get(ctx, done)
	if err != nil || r.Status != Complete || r.Report == nil || len(r.Report.Arms) != 2 {
		t.Fatalf("the run saved before the kill: %+v, %v", r, err)
	}
	list, err := d.List(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The child's run was begun (committed, running); its finishing transaction never landed.
	if len(list) != 2 || list[0].Status != Running || list[1].ID != done {
		t.Fatalf("after the kill: %+v", list)
	}
	var armRows int
	if err := d.db.QueryRow("SELECT count(*) FROM arm_results WHERE run_id = ?", list[0].ID).Scan(&armRows); err != nil || armRows != 0 {
		t.Errorf("the killed run has %d arm rows (%v), want none", armRows, err)
	}
	// The database takes new runs.
	if _, err := d.Save(ctx, &Run{Report: testReport("q8_0")}); err != nil {
		t.Fatal(err)
	}
}

// TestHelperChildWriter is the killed writer: it begins a run, then opens the transaction that
// would finish it, writes part of it, says so, and waits to be killed.
func TestHelperChildWriter(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		t.Skip("runs only as the child of TestKilledWriterLeavesDatabaseReadable")
	}
	ctx := context.Background()
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	id, err := d.Begin(ctx, &Run{Model: ModelRef{Name: "killed.gguf"}})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := testReport("q4_0", "q2k")
	rep.Arms[0].Decode.KL = make([]float64, 100000) // a large write in flight
	report, _ := json.Marshal(rep)
	if _, err := tx.Exec("UPDATE runs SET report = ?, status = 'complete' WHERE id = ?", string(report), id); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := tx.Exec(`INSERT INTO arm_results VALUES (?, ?, 'x', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)`, id, i); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println("IN-TRANSACTION")
	os.Stdout.Sync()
	time.Sleep(time.Minute)
	t.Fatal("not killed")
}

// TestHashFolder: a model folder hashes its files by name and content.
func TestHashFolder(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o600)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("abc"), 0o600)
	a, n, err := HashFile(context.Background(), dir)
	if err != nil || n != 5 {
		t.Fatalf("hash %s, %d bytes, %v", a, n, err)
	}
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("abd"), 0o600)
	if b, _, _ := HashFile(context.Background(), dir); b == a {
		t.Error("changing a file kept the hash")
	}
}

// TestMigrateFormatVersion: a schema-1 history gains runs.kv_formats; its runs that name no
// "-r" variant or turbo tier are marked unrotated and their q4_0 reads q4_0-r, the others keep
// their names; new runs record this kvlab's version.
func TestMigrateFormatVersion(t *testing.T) {
	ctx := context.Background()
	d, path := openTemp(t)
	old := &Run{Machine: ThisMachine("test"), Config: json.RawMessage(`{"arms":"f16,q4_0"}`), Report: testReport("f16", "q4_0", "q8_0/q4_0+w64")}
	oldID, err := d.Save(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	rot := &Run{Machine: ThisMachine("test"), Config: json.RawMessage(`{"arms":"q4_0,q4_0-r"}`), Report: testReport("q4_0", "q4_0-r")}
	rotID, err := d.Save(ctx, rot)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE runs DROP COLUMN kv_formats", "PRAGMA user_version = 1"} {
		if _, err := d.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	d, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var v int
	if err := d.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("user_version %d (%v), want %d", v, err, schemaVersion)
	}
	g, err := d.Get(ctx, oldID)
	if err != nil {
		t.Fatal(err)
	}
	if g.KVFormats != kvq.FormatsUnrotated || g.Report.Arms[1].Arm != "q4_0-r" || g.Report.Arms[2].Arm != "q8_0-r/q4_0-r+w64" ||
		g.Report.Arms[0].Arm != "f16" || g.Report.Settings.Arms[1] != "q4_0-r" {
		t.Errorf("old run: version %d, arms %q / %q", g.KVFormats, g.Report.Settings.Arms, []string{g.Report.Arms[0].Arm, g.Report.Arms[1].Arm, g.Report.Arms[2].Arm})
	}
	g, err = d.Get(ctx, rotID)
	if err != nil {
		t.Fatal(err)
	}
	if g.KVFormats != kvq.FormatsRotated || g.Report.Arms[0].Arm != "q4_0" || g.Report.Arms[1].Arm != "q4_0-r" {
		t.Errorf("rotated-era run: version %d, arms %q %q", g.KVFormats, g.Report.Arms[0].Arm, g.Report.Arms[1].Arm)
	}
	sums, err := d.List(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if s.ID == oldID && (s.KVFormats != kvq.FormatsUnrotated || s.Arms[1] != "q4_0-r") {
			t.Errorf("old run listed as version %d, arms %q", s.KVFormats, s.Arms)
		}
	}
	newID, err := d.Save(ctx, &Run{Machine: ThisMachine("test"), Report: testReport("q4_0")})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := d.Get(ctx, newID); err != nil || g.KVFormats != kvq.FormatVersion || g.Report.Arms[0].Arm != "q4_0" {
		t.Errorf("new run: %v, version %d", err, g.KVFormats)
	}
}
