package server

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/kvlab/kvlab/internal/history"
	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/server/api"
)

// TestLabSocket runs a live A/B of f16 and q4_0 on stories260K over /ws/lab: every position
// streams with both arms; the f16 arm matches the f16 reference exactly (KL 0, top-1 100 %),
// q4_0 does not quite; the run lands in the history and on /runs.
func TestLabSocket(t *testing.T) {
	s := mustNew(t, storiesConfig(t))
	ts := testServer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := dial(t, ctx, ts, "/ws/lab", nil)
	wsSend(t, ctx, c, map[string]any{"type": "start", "model": storiesName, "prompt": "Once upon a time", "arms": []string{"f16", "q4_0"}, "n": 24})
	var steps []api.ABStep
	var run *api.Run
	for run == nil {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m labServerMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		switch m.Type {
		case "ab_start":
			if len(m.Arms) != 2 || m.Arms[1].Name != "q4_0" || m.Arms[1].KVBytes >= m.Arms[0].KVBytes {
				t.Errorf("arms %+v", m.Arms)
			}
		case "ab_step":
			if m.Step.I != len(steps) || len(m.Step.Arms) != 2 {
				t.Fatalf("step %+v after %d", m.Step, len(steps))
			}
			steps = append(steps, *m.Step)
		case "ab_done":
			run = m.Run
		case "error":
			t.Fatalf("error: %s", b)
		}
	}
	if len(steps) != 24 || run.Tokens != 24 || run.ID == "" || run.Stopped {
		t.Fatalf("%d steps, run %+v", len(steps), run)
	}
	f16, q4 := run.Arms[0], run.Arms[1]
	if f16.MeanKL != 0 || f16.MaxKL != 0 || f16.Top1 != 1 {
		t.Errorf("the f16 arm differs from the f16 reference: %+v", f16)
	}
	if !(q4.MeanKL > 0) || q4.DecodeTPS <= 0 || q4.PrefillTPS <= 0 {
		t.Errorf("q4_0 arm %+v", q4)
	}
	if !strings.HasPrefix(storiesGreedy, run.Text[:20]) {
		t.Errorf("reference text %q", run.Text)
	}
	var joined strings.Builder
	for _, st := range steps {
		joined.WriteString(st.Arms[0].Text)
	}
	if joined.String() != f16.Text {
		t.Errorf("streamed f16 text %q, stored %q", joined.String(), f16.Text)
	}

	// The history has it; /runs lists it and /runs/ID shows its chart and texts.
	var list struct{ Runs []api.Run }
	decode(t, do(t, s.Handler(), http.MethodGet, "/api/runs", ""), &list)
	if len(list.Runs) != 1 || list.Runs[0].ID != run.ID || list.Runs[0].Arms[1].KL != nil {
		t.Errorf("runs %+v", list.Runs)
	}
	page := body(t, do(t, s.Handler(), http.MethodGet, "/runs", ""))
	if !strings.Contains(page, `data-run="`+run.ID+`"`) || !strings.Contains(page, `data-arm="q4_0"`) {
		t.Errorf("/runs does not list the run")
	}
	if !strings.Contains(page, `id="pareto-chart"`) || !strings.Contains(page, `<circle`) || !strings.Contains(page, "bits per value") {
		t.Errorf("/runs has no quality-against-size chart with the run's q4_0")
	}
	page = body(t, do(t, s.Handler(), http.MethodGet, "/runs/"+run.ID, ""))
	if !strings.Contains(page, `id="kl-chart"`) || !strings.Contains(page, "<polyline") {
		t.Errorf("/runs/%s has no chart", run.ID)
	}
	if r := do(t, s.Handler(), http.MethodGet, "/runs/999", ""); r.StatusCode != 404 {
		t.Errorf("/runs/999: %d", r.StatusCode)
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// TestLabStop: stop ends a run within a forward pass; what was measured is stored as stopped.
func TestLabStop(t *testing.T) {
	fc := &forwardCounter{delay: 5 * time.Millisecond}
	cfg := storiesConfig(t)
	cfg.ForwardHook = fc.wrap
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := dial(t, ctx, ts, "/ws/lab", nil)
	wsSend(t, ctx, c, map[string]any{"type": "start", "model": storiesName, "arms": []string{"q8_0", "q4_0"}, "n": 1000})
	steps := 0
	for steps < 3 {
		if m := wsRecv(t, ctx, c); m["type"] == "ab_step" {
			steps++
		} else if m["type"] == "error" {
			t.Fatal(m)
		}
	}
	wsSend(t, ctx, c, map[string]string{"type": "stop"})
	at := fc.n.Load()
	var done map[string]any
	for done == nil {
		if m := wsRecv(t, ctx, c); m["type"] == "ab_done" {
			done = m
		}
	}
	run := done["run"].(map[string]any)
	if run["stopped"] != true || run["id"] == "" {
		t.Errorf("run %v", run)
	}
	if n := fc.settled(t); n > at+3 {
		t.Errorf("%d forward passes after stop", n-at)
	}
}

// TestABAPI runs an A/B through POST /api/ab and reads it back.
func TestABAPI(t *testing.T) {
	s := mustNew(t, storiesConfig(t))
	h := s.Handler()
	r := do(t, h, http.MethodPost, "/api/ab", `{"model":"stories260K","prompt":"Once upon a time","arms":["f16","q8_0/q4_0"],"n":8}`)
	if r.StatusCode != 200 {
		t.Fatalf("status %d: %s", r.StatusCode, body(t, r))
	}
	var run api.Run
	decode(t, r, &run)
	if run.ID == "" || len(run.Arms) != 2 || run.Arms[0].MeanKL != 0 || len(run.Arms[1].KL) != 8 {
		t.Fatalf("run %+v", run)
	}
	var got api.Run
	decode(t, do(t, h, http.MethodGet, "/api/runs/"+run.ID, ""), &got)
	if got.ID != run.ID || got.Arms[1].MeanKL != run.Arms[1].MeanKL {
		t.Errorf("stored %+v", got)
	}
	// Text mode feeds the text's own last n tokens.
	text := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball."
	r = do(t, h, http.MethodPost, "/api/ab", `{"model":"stories260K","text":"`+text+`","arms":["q4_0"],"n":10}`)
	var tr api.Run
	decode(t, r, &tr)
	if tr.Mode != "text" || tr.Tokens != 10 || !strings.HasSuffix(text, tr.Text) || tr.RefText == "" {
		t.Errorf("text mode run %+v", tr)
	}
	r = do(t, h, http.MethodPost, "/api/ab", `{"model":"stories260K","arms":["f16"],"n":5000}`)
	var e apiErr
	decode(t, r, &e)
	if r.StatusCode != 400 || e.Error.Param != "n" {
		t.Errorf("n 5000: %d %+v", r.StatusCode, e)
	}
}

// TestABSpillOverlay: on a server whose caches keep a host-spill tail (serve --kv-resident, set
// here on a CPU engine), an A/B arm with the FP16 overlay or an f16 recent window (+p) whose
// caches would take a tail is refused before it runs, the error naming the arm, the overlay and the flag; one whose caches
// fit the resident cells runs.
func TestABSpillOverlay(t *testing.T) {
	s := mustNew(t, storiesConfig(t))
	eng, err := s.models.get("stories260K")
	if err != nil {
		t.Fatal(err)
	}
	eng.spill = engine.SpillOptions{Resident: 32}
	h := s.Handler()
	for _, arms := range []string{`["q4_0+w16"]`, `["q8_0","q4_0"],"window":16`, `["q4_0+s4"]`, `["q4_0+p16"]`} {
		r := do(t, h, http.MethodPost, "/api/ab", `{"model":"stories260K","prompt":"Once upon a time, there was a little girl named Lily. She loved to play outside.","arms":`+arms+`,"n":16}`)
		var e apiErr
		decode(t, r, &e)
		if r.StatusCode != 400 || e.Error.Param != "arms" || !strings.Contains(e.Error.Message, "(serve --kv-resident 32), and that host-spill tail takes no ") {
			t.Errorf("arms %s: %d %+v", arms, r.StatusCode, e)
		}
	}
	if r := do(t, h, http.MethodPost, "/api/ab", `{"model":"stories260K","prompt":"Once upon a time","arms":["q4_0+w16"],"n":8}`); r.StatusCode != 200 {
		t.Errorf("within the resident cells: status %d: %s", r.StatusCode, body(t, r))
	}
}

// TestRunHistoryPersists stores a live A/B in the SQLite run history that `kvlab runs` reads:
// the run survives a restart of the server, with its series, texts and the f16 determinism check.
func TestRunHistoryPersists(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	cfg := storiesConfig(t)
	cfg.HistoryPath = db
	s := mustNew(t, cfg)
	r := do(t, s.Handler(), http.MethodPost, "/api/ab", `{"model":"stories260K","prompt":"Once upon a time","arms":["f16","q4_0"],"n":12}`)
	var run api.Run
	decode(t, r, &run)
	if r.StatusCode != 200 || run.ID == "" {
		t.Fatalf("%d %+v", r.StatusCode, run)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	h, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.ParseInt(run.ID, 10, 64)
	stored, err := h.Get(context.Background(), id)
	h.Close()
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != history.Complete || stored.Model.SHA256 == "" || stored.Report == nil ||
		!stored.Report.Determ.Identical || len(stored.Report.Arms) != 2 || stored.Report.Arms[1].Decode.Positions != 12 {
		t.Fatalf("stored %+v", stored)
	}

	s2 := mustNew(t, cfg)
	var list struct{ Runs []api.Run }
	decode(t, do(t, s2.Handler(), http.MethodGet, "/api/runs", ""), &list)
	if len(list.Runs) != 1 || list.Runs[0].ID != run.ID || list.Runs[0].Arms[1].MeanKL != run.Arms[1].MeanKL {
		t.Fatalf("after a restart: %+v", list.Runs)
	}
	var got api.Run
	decode(t, do(t, s2.Handler(), http.MethodGet, "/api/runs/"+run.ID, ""), &got)
	if got.Arms[1].Text != run.Arms[1].Text || got.RefText != run.RefText || len(got.Arms[1].KL) != 12 || got.Source != "server" {
		t.Errorf("run read back %+v", got)
	}
	if page := body(t, do(t, s2.Handler(), http.MethodGet, "/runs/"+run.ID, "")); !strings.Contains(page, "<polyline") {
		t.Error("the run's page has no chart")
	}
}
