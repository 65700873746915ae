package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/server/api"
	"github.com/kvlab/kvlab/web"
	"github.com/labstack/echo/v4"
)

// Lab websocket protocol (docs/api.md). The page sends {"type":"start", …api.ABRequest} or
// {"type":"stop"}, and receives "queued", "ab_start" (the arms), "prefill" progress, one
// "ab_step" per compared position (api.ABStep), then "ab_done" with the stored run (or "error").

// labMessage is a message from the lab page.
type labMessage struct {
	Type string `json:"type"`
	api.ABRequest
}

// labServerMessage is a message to the lab page.
type labServerMessage struct {
	Type         string          `json:"type"`
	Arms         []api.ABArmInfo `json:"arms,omitempty"`
	PromptTokens int             `json:"prompt_tokens,omitempty"`
	Model        string          `json:"model,omitempty"`
	N            int             `json:"n,omitempty"`
	// Device is where the run computes ("cpu", "cuda: …"): the server's device.
	Device string      `json:"device,omitempty"`
	Done   int         `json:"done,omitempty"`
	Total  int         `json:"total,omitempty"`
	Step   *api.ABStep `json:"step,omitempty"`
	Run    *api.Run    `json:"run,omitempty"`
}

// parseLabMessage decodes one message from the lab page.
func parseLabMessage(data []byte) (labMessage, error) {
	var m labMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return m, badRequest("", "the message is not valid JSON: %v", err)
	}
	if m.Type != "start" && m.Type != "stop" {
		return m, badRequest("type", "unknown message type %q (want start or stop)", m.Type)
	}
	return m, nil
}

// labSocket is /ws/lab: one A/B run at a time per connection, streamed position by position;
// "stop" cancels it within one forward pass, and what was measured is stored.
func (s *Server) labSocket(c echo.Context) error {
	conn, ctx, genCtx, done, err := s.accept(c, "lab")
	if conn == nil {
		return err
	}
	defer done()
	ws := wsConn{c: conn, ctx: ctx}
	var run job
	defer run.wait()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return nil
		}
		m, err := parseLabMessage(data)
		if err != nil {
			if ws.sendError(err) != nil {
				return nil
			}
			continue
		}
		if m.Type == "stop" {
			run.stop()
			continue
		}
		if run.running() {
			if ws.sendError(badRequest("", "an A/B run is in progress: send stop first")) != nil {
				return nil
			}
			continue
		}
		req := m.ABRequest
		run.start(genCtx, func(ctx context.Context, finish func()) { s.labRun(ctx, ws, req, finish) })
	}
}

// labRun runs one A/B for the lab socket and stores it.
func (s *Server) labRun(ctx context.Context, ws wsConn, req api.ABRequest, finish func()) {
	fail := func(err error) {
		finish()
		_ = ws.sendError(err)
	}
	plan, err := s.checkAB(req)
	if err != nil {
		fail(err)
		return
	}
	if s.gate.running() >= cap(s.gate.slots) {
		if ws.send(labServerMessage{Type: "queued"}) != nil {
			return
		}
	}
	release, err := s.gate.acquire(ctx)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			fail(err)
		}
		return
	}
	defer release()
	run, err := s.runAB(ctx, plan, abEvents{
		start: func(arms []api.ABArmInfo, promptTokens int) error {
			return ws.send(labServerMessage{Type: "ab_start", Arms: arms, PromptTokens: promptTokens, Model: plan.eng.Info.Name, N: plan.req.N, Device: plan.eng.Device})
		},
		prefill: func(done, total int) error {
			return ws.send(labServerMessage{Type: "prefill", Done: done, Total: total})
		},
		step: func(st api.ABStep) error {
			return ws.send(labServerMessage{Type: "ab_step", Step: &st})
		},
	})
	if err != nil && !run.Stopped {
		fail(err)
		return
	}
	if run.Tokens > 0 {
		if run.ID, err = s.history.store.add(run); err != nil {
			s.log.Error("storing an A/B run failed", "err", err)
			fail(err)
			return
		}
	}
	finish()
	_ = ws.send(labServerMessage{Type: "ab_done", Run: &run})
}

// apiAB is POST /api/ab: an A/B run answered as one JSON document (the stored run) when it ends.
func (s *Server) apiAB(c echo.Context) error {
	var req api.ABRequest
	if err := s.decodeJSON(c, &req); err != nil {
		return err
	}
	plan, err := s.checkAB(req)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	release, err := s.gate.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	nop := func(int, int) error { return nil }
	run, err := s.runAB(ctx, plan, abEvents{
		start:   func([]api.ABArmInfo, int) error { return nil },
		prefill: nop,
		step:    func(api.ABStep) error { return nil },
	})
	if err != nil {
		return err
	}
	if run.ID, err = s.history.store.add(run); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// apiRuns is GET /api/runs?limit=N: the newest runs first, without their per-position series.
func (s *Server) apiRuns(c echo.Context) error {
	limit := 100
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return badRequest("limit", "limit %q: want a positive whole number", l)
		}
		limit = n
	}
	runs, err := s.history.store.list(limit)
	if err != nil {
		return err
	}
	for i := range runs {
		runs[i] = brief(runs[i])
	}
	if runs == nil {
		runs = []api.Run{}
	}
	return c.JSON(http.StatusOK, map[string]any{"runs": runs, "history": s.history.describe()})
}

// brief drops a run's long fields for listings.
func brief(r api.Run) api.Run {
	r.Text, r.RefText, r.Report = "", "", nil
	arms := make([]api.RunArm, len(r.Arms))
	for i, a := range r.Arms {
		a.KL, a.Text = nil, ""
		arms[i] = a
	}
	r.Arms = arms
	return r
}

// apiRun is GET /api/runs/:id.
func (s *Server) apiRun(c echo.Context) error {
	r, err := s.history.store.get(c.Param("id"))
	if errors.Is(err, ErrNoRun) {
		return &apiError{Status: http.StatusNotFound, Type: typeNotFound, Code: "run_not_found", Message: err.Error()}
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// labPage is /lab; its query may preset the form: model, prompt, n and arms (repeated or
// comma-separated), as the planner's "send to the lab" link does.
func (s *Server) labPage(c echo.Context) error {
	q := c.QueryParams()
	d := web.LabData{Page: s.pageData("lab"), Models: s.modelStatus(), Default: s.defaultModel(), Places: s.cfg.Places,
		Prompt: q.Get("prompt"), N: api.DefaultN, Arms: web.ArmsFromQuery(q["arms"]), Formats: web.LabFormats()}
	if s.cfg.Device == DeviceCPU {
		d.KernelNote = kvq.KernelSummary()
	}
	if m := q.Get("model"); m != "" {
		d.Default = m
	}
	if n, err := strconv.Atoi(q.Get("n")); err == nil && n > 0 {
		d.N = n
	}
	if d.Prompt == "" {
		d.Prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
	}
	return s.renderPage(c, http.StatusOK, web.LabPage(d))
}

// runsPage is /runs.
func (s *Server) runsPage(c echo.Context) error {
	runs, err := s.history.store.list(200)
	if err != nil {
		return err
	}
	return s.renderPage(c, http.StatusOK, web.RunsPage(web.RunsData{Page: s.pageData("runs"), Runs: runs, Where: s.history.describe()}))
}

// runPage is /runs/:id.
func (s *Server) runPage(c echo.Context) error {
	r, err := s.history.store.get(c.Param("id"))
	if errors.Is(err, ErrNoRun) {
		return s.renderPage(c, http.StatusNotFound, s.errorPage(http.StatusNotFound, err.Error()))
	}
	if err != nil {
		return err
	}
	return s.renderPage(c, http.StatusOK, web.RunPage(web.RunData{Page: s.pageData("runs"), Run: r}))
}
