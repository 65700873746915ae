// Package history stores kvlab's measurement runs (A/B runs of native/lab) in an embedded
// SQLite database (modernc.org/sqlite, pure Go, no cgo), for `kvlab runs` and the server.
//
// Durability: the database runs in WAL mode and every write is one transaction. A run is
// recorded in two steps: Begin inserts it as running, and Finish (or Fail) stores its results
// and marks it complete (or failed) in a single transaction. A process killed mid-run leaves
// its run marked running and every earlier run untouched; Save records a finished run at once.
package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/report"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// EnvDB names the environment variable that overrides the default database path.
const EnvDB = "KVLAB_DB"

// ErrNotFound is returned by Get for a run id the database does not hold.
var ErrNotFound = errors.New("history: no such run")

// Status is a run's state.
type Status string

// The run states.
const (
	Running  Status = "running"
	Complete Status = "complete"
	Failed   Status = "failed"
)

// ModelRef identifies the model file a run measured.
type ModelRef struct {
	Path   string `json:"path"`
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// Run is one stored run.
type Run struct {
	ID       int64     `json:"id"`
	Kind     string    `json:"kind"` // "ab"
	Status   Status    `json:"status"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Model    ModelRef  `json:"model"`
	Machine  Machine   `json:"machine"`
	// Config is the run's settings as given (flags, text source), as JSON.
	Config json.RawMessage `json:"config"`
	// Report is the result, nil unless the run completed.
	Report *report.ABReport `json:"report,omitempty"`
	Error  string           `json:"error,omitempty"`
	// KVFormats is the format version (kvq.FormatVersion) the run's pair names had; 0 when
	// recording means this kvlab's. Get and List return the names of older runs as they are
	// called today (kvq.NameAtVersion: a q4_0 measured before rotation became the default
	// reads "q4_0-r").
	KVFormats int `json:"kv_formats"`
}

// Summary is a run as List shows it.
type Summary struct {
	ID       int64     `json:"id"`
	Kind     string    `json:"kind"`
	Status   Status    `json:"status"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Model    string    `json:"model"`
	SHA256   string    `json:"sha256"`
	Arms     []string  `json:"arms"`
	Error    string    `json:"error,omitempty"`
	// KVFormats is the run's format version (Run.KVFormats); Arms are named as today.
	KVFormats int `json:"kv_formats"`
}

// DB is an open run history.
type DB struct {
	db   *sql.DB
	path string
}

// schemaVersion is the schema this package writes, kept in PRAGMA user_version. Version 2
// added runs.kv_formats (migrate2).
const schemaVersion = 2

const schema = `
CREATE TABLE runs (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	kind         TEXT NOT NULL,
	status       TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed')),
	started_at   TEXT NOT NULL,
	finished_at  TEXT NOT NULL DEFAULT '',
	model_path   TEXT NOT NULL DEFAULT '',
	model_name   TEXT NOT NULL DEFAULT '',
	model_sha256 TEXT NOT NULL DEFAULT '',
	model_bytes  INTEGER NOT NULL DEFAULT 0,
	machine      TEXT NOT NULL,
	config       TEXT NOT NULL,
	arms         TEXT NOT NULL DEFAULT '[]',
	report       TEXT NOT NULL DEFAULT '',
	error        TEXT NOT NULL DEFAULT '',
	kv_formats   INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE arm_results (
	run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	idx             INTEGER NOT NULL,
	arm             TEXT NOT NULL,
	decode_kl_mean  REAL NOT NULL,
	decode_kl_p99   REAL NOT NULL,
	decode_top1     REAL NOT NULL,
	prompt_kl_mean  REAL NOT NULL,
	prompt_kl_p99   REAL NOT NULL,
	prompt_top1     REAL NOT NULL,
	ppl             REAL NOT NULL,
	decode_ppl      REAL NOT NULL,
	attn_err_mean   REAL NOT NULL,
	needle_ok       INTEGER NOT NULL,
	needle_total    INTEGER NOT NULL,
	prefill_tps     REAL NOT NULL,
	decode_tps      REAL NOT NULL,
	kv_bytes        INTEGER NOT NULL,
	bytes_per_token REAL NOT NULL,
	PRIMARY KEY (run_id, idx)
);
CREATE INDEX runs_started ON runs(started_at);
`

// DefaultPath is the database used when none is given: $KVLAB_DB when set, else runs.db in
// kvlab's directory under the user's configuration directory (os.UserConfigDir).
func DefaultPath() (string, error) {
	if p := os.Getenv(EnvDB); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("history: no user configuration directory for the run database (set %s): %w", EnvDB, err)
	}
	return filepath.Join(dir, "kvlab", "runs.db"), nil
}

// Open opens the database at path, creating it (and its directory) with the current schema
// when it does not exist. A database written by a newer kvlab, or a file that is not a kvlab
// database, fails with an error naming the path.
func Open(ctx context.Context, path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("history: empty database path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	dsn := "file:" + filepath.ToSlash(path) +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	d := &DB{db: db, path: path}
	if err := d.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("history: %s: %w", path, err)
	}
	return d, nil
}

func (d *DB) migrate(ctx context.Context) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("not a readable SQLite database: %w", err)
	}
	switch {
	case v == schemaVersion:
		return nil
	case v > schemaVersion:
		return fmt.Errorf("the database has schema version %d, newer than this kvlab's %d", v, schemaVersion)
	case v == 1:
		if err := migrate2(ctx, tx); err != nil {
			return fmt.Errorf("migrating the run history to schema 2: %w", err)
		}
		return tx.Commit()
	}
	var tables int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table'").Scan(&tables); err != nil {
		return err
	}
	if tables > 0 {
		return errors.New("the file holds an SQLite database that is not a kvlab run history")
	}
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

// migrate2 adds runs.kv_formats to a schema-1 history. Its runs predate the column: those whose
// arms or configuration name an "-r" variant or a turbo tier (names that exist only since
// rotation became the default) get kvq.FormatsRotated, every other run kvq.FormatsUnrotated,
// so that a q4_0 of those runs shows as the unrotated q4_0-r it was.
func migrate2(ctx context.Context, tx *sql.Tx) error {
	stmts := []string{
		fmt.Sprintf("ALTER TABLE runs ADD COLUMN kv_formats INTEGER NOT NULL DEFAULT %d", kvq.FormatsUnrotated),
		fmt.Sprintf(`UPDATE runs SET kv_formats = %d WHERE arms LIKE '%%-r%%' OR arms LIKE '%%turbo%%'
			OR config LIKE '%%-r"%%' OR config LIKE '%%-r,%%' OR config LIKE '%%-r/%%' OR config LIKE '%%turbo%%'`, kvq.FormatsRotated),
		"PRAGMA user_version = 2",
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// Path is the database's file.
func (d *DB) Path() string { return d.path }

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }

const timeFormat = time.RFC3339Nano

// Begin records r as running (Started defaults to now) and returns its id.
func (d *DB) Begin(ctx context.Context, r *Run) (int64, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	defer tx.Rollback()
	id, err := insertRun(ctx, tx, r, Running)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	r.ID, r.Status = id, Running
	return id, nil
}

// Finish stores the report of run id and marks it complete, in one transaction.
func (d *DB) Finish(ctx context.Context, id int64, rep *report.ABReport) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer tx.Rollback()
	if err := finishRun(ctx, tx, id, rep, time.Now()); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// SetConfig replaces the configuration stored with run id (a run's texts are known only once
// it has run).
func (d *DB) SetConfig(ctx context.Context, id int64, cfg json.RawMessage) error {
	res, err := d.db.ExecContext(ctx, "UPDATE runs SET config = ? WHERE id = ?", string(cfg), id)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	return nil
}

// Fail marks run id failed with the error's message.
func (d *DB) Fail(ctx context.Context, id int64, cause error) error {
	msg := "failed"
	if cause != nil {
		msg = cause.Error()
	}
	res, err := d.db.ExecContext(ctx, "UPDATE runs SET status = 'failed', finished_at = ?, error = ? WHERE id = ? AND status = 'running'",
		time.Now().UTC().Format(timeFormat), msg, id)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %d is not running", ErrNotFound, id)
	}
	return nil
}

// Save records a finished run (r.Report set) in one transaction and returns its id.
func (d *DB) Save(ctx context.Context, r *Run) (int64, error) {
	if r.Report == nil {
		return 0, errors.New("history: Save of a run without a report")
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	defer tx.Rollback()
	id, err := insertRun(ctx, tx, r, Running)
	if err != nil {
		return 0, err
	}
	fin := r.Finished
	if fin.IsZero() {
		fin = time.Now()
	}
	if err := finishRun(ctx, tx, id, r.Report, fin); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	r.ID, r.Status, r.Finished = id, Complete, fin
	return id, nil
}

func insertRun(ctx context.Context, tx *sql.Tx, r *Run, st Status) (int64, error) {
	if r.Kind == "" {
		r.Kind = "ab"
	}
	if r.Started.IsZero() {
		r.Started = time.Now()
	}
	machine, err := json.Marshal(r.Machine)
	if err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	cfg := r.Config
	if len(cfg) == 0 {
		cfg = json.RawMessage("{}")
	}
	if r.KVFormats == 0 {
		r.KVFormats = kvq.FormatVersion
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO runs (kind, status, started_at, model_path, model_name, model_sha256,
		model_bytes, machine, config, kv_formats) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Kind, string(st), r.Started.UTC().Format(timeFormat), r.Model.Path, r.Model.Name, r.Model.SHA256,
		r.Model.Bytes, string(machine), string(cfg), r.KVFormats)
	if err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	return res.LastInsertId()
}

func finishRun(ctx context.Context, tx *sql.Tx, id int64, rep *report.ABReport, fin time.Time) error {
	if rep == nil {
		return errors.New("history: Finish without a report")
	}
	repJSON, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	arms, err := json.Marshal(rep.Settings.Arms)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'complete', finished_at = ?, report = ?, arms = ?
		WHERE id = ? AND status = 'running'`, fin.UTC().Format(timeFormat), string(repJSON), string(arms), id)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %d is not running", ErrNotFound, id)
	}
	for i, a := range rep.Arms {
		if _, err := tx.ExecContext(ctx, `INSERT INTO arm_results (run_id, idx, arm, decode_kl_mean, decode_kl_p99,
			decode_top1, prompt_kl_mean, prompt_kl_p99, prompt_top1, ppl, decode_ppl, attn_err_mean, needle_ok,
			needle_total, prefill_tps, decode_tps, kv_bytes, bytes_per_token)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, i, a.Arm, a.Decode.KLMean, a.Decode.KLP99, a.Decode.Top1, a.Prompt.KLMean, a.Prompt.KLP99,
			a.Prompt.Top1, a.PPL, a.DecodePPL, a.AttnErrMean, a.Needle.OK, a.Needle.Total, a.PrefillTPS,
			a.DecodeTPS, a.KVBytes, a.BytesPerToken); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	return nil
}

// ListOptions filter List.
type ListOptions struct {
	// Limit is the most runs returned, newest first; 0 means all.
	Limit int
}

// List returns stored runs, newest first.
func (d *DB) List(ctx context.Context, opt ListOptions) ([]Summary, error) {
	q := `SELECT id, kind, status, started_at, finished_at, model_name, model_sha256, arms, config, error, kv_formats
		FROM runs ORDER BY id DESC`
	var args []any
	if opt.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, opt.Limit)
	}
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer rows.Close()
	var out []Summary
	for rows.Next() {
		var s Summary
		var started, finished, arms, cfg, status string
		if err := rows.Scan(&s.ID, &s.Kind, &status, &started, &finished, &s.Model, &s.SHA256, &arms, &cfg, &s.Error, &s.KVFormats); err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		s.Status = Status(status)
		s.Started, _ = time.Parse(timeFormat, started)
		s.Finished, _ = time.Parse(timeFormat, finished)
		_ = json.Unmarshal([]byte(arms), &s.Arms)
		if len(s.Arms) == 0 { // a run that did not finish: its configured arms
			var c struct {
				Arms string `json:"arms"`
			}
			if json.Unmarshal([]byte(cfg), &c) == nil && c.Arms != "" {
				s.Arms = strings.Split(c.Arms, ",")
			}
		}
		for i, a := range s.Arms {
			s.Arms[i] = ArmAtVersion(a, s.KVFormats)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Get returns run id with its report. A stored report that no longer parses fails with an
// error naming the run.
func (d *DB) Get(ctx context.Context, id int64) (*Run, error) {
	var r Run
	var started, finished, machine, cfg, repJSON, status string
	err := d.db.QueryRowContext(ctx, `SELECT id, kind, status, started_at, finished_at, model_path, model_name,
		model_sha256, model_bytes, machine, config, report, error, kv_formats FROM runs WHERE id = ?`, id).Scan(
		&r.ID, &r.Kind, &status, &started, &finished, &r.Model.Path, &r.Model.Name, &r.Model.SHA256,
		&r.Model.Bytes, &machine, &cfg, &repJSON, &r.Error, &r.KVFormats)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	r.Status = Status(status)
	r.Started, _ = time.Parse(timeFormat, started)
	r.Finished, _ = time.Parse(timeFormat, finished)
	r.Config = json.RawMessage(cfg)
	if err := json.Unmarshal([]byte(machine), &r.Machine); err != nil {
		return nil, fmt.Errorf("history: run %d: machine: %w", id, err)
	}
	if repJSON != "" {
		r.Report = new(report.ABReport)
		if err := json.Unmarshal([]byte(repJSON), r.Report); err != nil {
			return nil, fmt.Errorf("history: run %d: report: %w", id, err)
		}
		if r.KVFormats < kvq.FormatVersion {
			for i, a := range r.Report.Settings.Arms {
				r.Report.Settings.Arms[i] = ArmAtVersion(a, r.KVFormats)
			}
			for i := range r.Report.Arms {
				a := &r.Report.Arms[i]
				a.Arm, a.Pair = ArmAtVersion(a.Arm, r.KVFormats), ArmAtVersion(a.Pair, r.KVFormats)
			}
		}
	}
	return &r, nil
}

// ArmAtVersion names an arm ("q8_0/q4_0+w64": a pair, then its options) of a run at format
// version v as it is called today: the pair through kvq.NameAtVersion, the options unchanged.
func ArmAtVersion(arm string, v int) string {
	pair, opts, _ := strings.Cut(arm, "+")
	name := kvq.NameAtVersion(strings.TrimSpace(pair), v)
	if name == strings.TrimSpace(pair) {
		return arm
	}
	if opts != "" {
		return name + "+" + opts
	}
	return name
}
