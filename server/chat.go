package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/kvlab/kvlab/server/chattemplate"
	"github.com/labstack/echo/v4"
)

// session is a chat conversation the server keeps for a while, keyed by an id the page makes,
// so that a reload (or another tab) can show it again.
type session struct {
	ID       string                 `json:"id"`
	Model    string                 `json:"model"`
	Messages []chattemplate.Message `json:"messages"`
	Updated  time.Time              `json:"updated"`
}

// sessionStore keeps sessions for ttl after their last use, at most max of them (the least
// recently used goes first). Expired sessions are dropped on the next access; no goroutine runs.
type sessionStore struct {
	ttl time.Duration
	max int
	// files, when set, keeps every session on disk too (Config.DataDir).
	files *sessionFiles

	mu sync.Mutex
	m  map[string]*session
	// writing holds, per session with a file being written, the lock of its file: taken with
	// mu held (so one session's writes and removal happen in the order of their calls), held
	// without mu while the file is written and synced (so other sessions do not wait for it).
	writing map[string]*sync.Mutex
}

func newSessionStore(ttl time.Duration, max int) *sessionStore {
	return &sessionStore{ttl: ttl, max: max, m: map[string]*session{}, writing: map[string]*sync.Mutex{}}
}

// sessionID is the shape of a session id: letters, digits, '-' and '_'.
var sessionID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// prune drops expired sessions and, past max, the least recently used. Call with mu held.
func (st *sessionStore) prune(now time.Time) {
	for id, s := range st.m {
		if now.Sub(s.Updated) > st.ttl {
			st.dropLocked(id)
		}
	}
	for len(st.m) > st.max {
		var oldest *session
		for _, s := range st.m {
			if oldest == nil || s.Updated.Before(oldest.Updated) {
				oldest = s
			}
		}
		st.dropLocked(oldest.ID)
	}
}

// dropLocked forgets session id and removes its file, after a write of it in progress. Call
// with mu held.
func (st *sessionStore) dropLocked(id string) {
	delete(st.m, id)
	if w := st.writing[id]; w != nil {
		w.Lock() // the write in progress needs no mu: it ends
		defer w.Unlock()
		delete(st.writing, id)
	}
	st.files.remove(id)
}

// put stores a copy of a session's conversation.
func (st *sessionStore) put(id, model string, msgs []chattemplate.Message) {
	if id == "" {
		return
	}
	now := time.Now()
	s := &session{ID: id, Model: model, Messages: append([]chattemplate.Message(nil), msgs...), Updated: now}
	st.mu.Lock()
	st.m[id] = s
	st.prune(now)
	if st.files == nil || st.m[id] != s {
		st.mu.Unlock()
		return
	}
	w := st.writing[id]
	if w == nil {
		w = &sync.Mutex{}
		st.writing[id] = w
	}
	w.Lock()
	st.mu.Unlock()
	defer w.Unlock()
	st.files.save(s) // s is never changed: a later put stores a new session
}

// get returns a copy of a session.
func (st *sessionStore) get(id string) (session, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.prune(time.Now())
	s, ok := st.m[id]
	if !ok {
		return session{}, false
	}
	out := *s
	out.Messages = append([]chattemplate.Message(nil), s.Messages...)
	return out, true
}

func (st *sessionStore) delete(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.dropLocked(id)
}

func (st *sessionStore) len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.prune(time.Now())
	return len(st.m)
}

// Chat websocket protocol (docs/api.md). The page sends
//
//	{"type":"chat","session":ID,"model":NAME,"messages":[…],"max_tokens":N,"temperature":T,…}
//	{"type":"stop"}
//
// and receives, for each chat message, "queued" (when it waits for a slot), "start", "prefill"
// progress, one "token" per generated token, then "done" (or "error").

// clientMessage is a message from the chat page.
type clientMessage struct {
	Type     string                 `json:"type"`
	Session  string                 `json:"session,omitempty"`
	Model    string                 `json:"model,omitempty"`
	Messages []chattemplate.Message `json:"messages,omitempty"`
	// MaxTokens caps the reply (default: until the model stops or the context is full).
	MaxTokens *int `json:"max_tokens,omitempty"`
	samplingFields
}

// chatRequest is a validated chat message.
type chatRequest struct {
	clientMessage
	maxTokens int
}

// parseClientMessage decodes and validates one message from the chat page.
func parseClientMessage(data []byte) (chatRequest, error) {
	var m clientMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return chatRequest{}, badRequest("", "the message is not valid JSON: %v", err)
	}
	req := chatRequest{clientMessage: m}
	switch m.Type {
	case "stop":
		return req, nil
	case "chat":
	default:
		return req, badRequest("type", "unknown message type %q (want chat or stop)", m.Type)
	}
	if m.Session != "" && !sessionID.MatchString(m.Session) {
		return req, badRequest("session", "session: ids are 1 to 64 letters, digits, '-' or '_'")
	}
	if err := checkMessages(req.Messages); err != nil {
		return req, err
	}
	var err error
	if req.maxTokens, err = checkMaxTokens("max_tokens", m.MaxTokens); err != nil {
		return req, err
	}
	if _, err := m.sampler(0.8, 0); err != nil {
		return req, err
	}
	return req, nil
}

// serverMessage is every message the chat and lab sockets send; fields not used by a type are
// left out.
type serverMessage struct {
	Type  string `json:"type"`
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`

	Model        string  `json:"model,omitempty"`
	KVFormat     string  `json:"kv_format,omitempty"`
	Device       string  `json:"device,omitempty"`
	KVBytes      int64   `json:"kv_bytes,omitempty"`
	BytesPerCell float64 `json:"bytes_per_cell,omitempty"`
	Ctx          int     `json:"ctx,omitempty"`
	CtxUsed      int     `json:"ctx_used,omitempty"`
	PromptTokens int     `json:"prompt_tokens,omitempty"`
	CachedTokens int     `json:"cached_tokens,omitempty"`
	Template     string  `json:"template,omitempty"`

	Done  int `json:"done,omitempty"`
	Total int `json:"total,omitempty"`

	Text string  `json:"text,omitempty"`
	N    int     `json:"n,omitempty"`
	TPS  float64 `json:"tps,omitempty"`

	Result *GenResult `json:"result,omitempty"`
}

// writeTimeout bounds one websocket write: a client that stops reading is dropped.
const writeTimeout = 10 * time.Second

// wsConn is a websocket whose writes are JSON messages under a timeout.
type wsConn struct {
	c   *websocket.Conn
	ctx context.Context
}

func (w wsConn) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(w.ctx, writeTimeout)
	defer cancel()
	return w.c.Write(ctx, websocket.MessageText, b)
}

func (w wsConn) sendError(err error) error {
	ae := boundedError(asAPIError(err))
	code := ae.Code
	if code == "" {
		code = ae.Type
	}
	return w.send(serverMessage{Type: "error", Error: ae.Message, Code: code})
}

// checkOrigin refuses a websocket from a page of another origin (checkSameOrigin: Origin is
// compared with the Host allow-list and the server's port, never with the Host header, which
// a rebound name controls).
func (s *Server) checkOrigin(r *http.Request) error { return s.checkSameOrigin(r) }

// accept upgrades a request to a websocket after the origin check, registered as work the
// shutdown waits for. It returns the connection's context (cancelled when the handler returns,
// for reads and writes) and the parent of its generations' contexts (cancelled also when the
// server stops waiting for generations at shutdown); the socket itself is closed with "going
// away" once those generations are done. done must be called when the handler returns.
func (s *Server) accept(c echo.Context, endpoint string) (conn *websocket.Conn, connCtx, genCtx context.Context, done func(), err error) {
	r := c.Request()
	if err := s.checkOrigin(r); err != nil {
		return nil, nil, nil, nil, err
	}
	if !s.enter() {
		return nil, nil, nil, nil, ErrDraining
	}
	conn, err = websocket.Accept(c.Response(), r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // checkOrigin did
	if err != nil {
		s.leave()
		c.Response().Committed = true
		return nil, nil, nil, nil, nil
	}
	conn.SetReadLimit(s.cfg.MaxMessageBytes)
	connCtx, cancelConn := context.WithCancel(context.Background())
	genCtx, cancelGen := context.WithCancel(connCtx)
	stopGen := context.AfterFunc(s.base, cancelGen)
	stopSock := context.AfterFunc(s.sockets, func() { conn.Close(websocket.StatusGoingAway, "the server is shutting down") })
	g := s.metrics.wsSessions.WithLabelValues(endpoint)
	g.Inc()
	done = func() {
		stopGen()
		stopSock()
		cancelGen()
		cancelConn()
		conn.CloseNow()
		g.Dec()
		s.leave()
	}
	return conn, connCtx, genCtx, done, nil
}

// chatSocket is /ws/chat: one conversation turn at a time per connection; "stop" cancels the
// turn's generation, which ends within one token.
func (s *Server) chatSocket(c echo.Context) error {
	conn, ctx, genCtx, done, err := s.accept(c, "chat")
	if conn == nil {
		return err
	}
	defer done()
	ws := wsConn{c: conn, ctx: ctx}
	var turn job
	defer turn.wait()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return nil // closed by the page, too big, or shutdown: the deferred calls clean up
		}
		req, err := parseClientMessage(data)
		if err != nil {
			if ws.sendError(err) != nil {
				return nil
			}
			continue
		}
		if req.Type == "stop" {
			turn.stop()
			continue
		}
		if turn.running() {
			if ws.sendError(badRequest("", "a reply is still being generated: send stop first")) != nil {
				return nil
			}
			continue
		}
		turn.start(genCtx, func(ctx context.Context, finish func()) { s.chatTurn(ctx, ws, req, finish) })
	}
}

// job runs a websocket's generations, one at a time, each on its own goroutine.
type job struct {
	wg     sync.WaitGroup
	cancel context.CancelFunc
	busy   atomic.Bool
}

// start runs fn on a new goroutine with a context that stop cancels. fn calls finish just
// before it sends its last message, so that the page's next request, sent on receiving it, is
// not refused as overlapping.
func (j *job) start(parent context.Context, fn func(ctx context.Context, finish func())) {
	ctx, cancel := context.WithCancel(parent)
	j.cancel = cancel
	j.busy.Store(true)
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		defer cancel()
		fn(ctx, func() { j.busy.Store(false) })
		j.busy.Store(false)
	}()
}

// running reports whether a generation has not finished.
func (j *job) running() bool { return j.busy.Load() }

// stop cancels the current generation.
func (j *job) stop() {
	if j.cancel != nil {
		j.cancel()
	}
}

// wait cancels the current generation and waits for every goroutine to return.
func (j *job) wait() {
	j.stop()
	j.wg.Wait()
}

// chatTurn generates one reply and streams it to the page.
func (s *Server) chatTurn(ctx context.Context, ws wsConn, req chatRequest, finish func()) {
	fail := func(err error) {
		finish()
		_ = ws.sendError(err)
	}
	eng, err := s.models.get(req.Model)
	if err != nil {
		fail(err)
		return
	}
	prompt, cp, err := eng.RenderChatText(req.Messages)
	if err != nil {
		fail(badRequest("messages", "%v", err))
		return
	}
	if len(prompt) > eng.Ctx {
		fail(&apiError{Status: 400, Type: typeInvalid, Code: "context_length_exceeded",
			Message: "the conversation is " + itoa(len(prompt)) + " tokens, longer than the context of " + itoa(eng.Ctx) + " tokens: start a new chat"})
		return
	}
	smp, _ := req.sampler(0.8, uint64(time.Now().UnixNano()))
	s.sessions.put(req.Session, eng.Info.Name, req.Messages)
	accepted := time.Now()
	if s.gate.running() >= cap(s.gate.slots) {
		if ws.send(serverMessage{Type: "queued"}) != nil {
			return
		}
	}
	release, err := s.gate.acquire(ctx)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			fail(err)
		} else {
			finish()
			_ = ws.send(serverMessage{Type: "done", Result: &GenResult{Stop: StopCancelled}})
		}
		return
	}
	defer release()
	if err := ws.send(serverMessage{Type: "start", Model: eng.Info.Name, KVFormat: eng.Decision.Format, Device: eng.Device, Ctx: eng.Ctx,
		PromptTokens: len(prompt), BytesPerCell: eng.BytesPerCell(), KVBytes: eng.runner.Pool().PerCache(), Template: eng.Template.Name()}); err != nil {
		return
	}
	first := true
	res, err := eng.Generate(ctx, GenParams{Prompt: prompt, MaxTokens: req.maxTokens, Sampler: smp,
		Stops: chattemplate.Stops(eng.Template), TrimLeading: true, PromptText: cp.Text, PromptLayout: cp.Layout}, func(ev Event) error {
		switch ev.Kind {
		case EventPrefill:
			return ws.send(serverMessage{Type: "prefill", Done: ev.Done, Total: ev.Total, CtxUsed: ev.CtxUsed})
		default:
			if first {
				first = false
				s.metrics.firstToken(eng.Info.Name, time.Since(accepted).Seconds())
			}
			tps := 0.0
			if ev.Elapsed > 0 && ev.N > 1 {
				tps = float64(ev.N-1) / ev.Elapsed.Seconds()
			}
			return ws.send(serverMessage{Type: "token", Text: ev.Text, N: ev.N, TPS: tps, CtxUsed: ev.CtxUsed + 1})
		}
	})
	if err != nil && res.Stop != StopCancelled {
		fail(err)
		return
	}
	reply := append(append([]chattemplate.Message(nil), req.Messages...), chattemplate.Message{Role: chattemplate.RoleAssistant, Content: res.Text})
	s.sessions.put(req.Session, eng.Info.Name, reply)
	finish()
	_ = ws.send(serverMessage{Type: "done", Result: &res, KVBytes: res.KVBytes, CtxUsed: res.CtxUsed, Ctx: res.Ctx})
}

// apiSession is GET /api/sessions/:id: a kept conversation.
func (s *Server) apiSession(c echo.Context) error {
	sess, ok := s.sessions.get(c.Param("id"))
	if !ok {
		return &apiError{Status: http.StatusNotFound, Type: typeNotFound, Code: "session_not_found",
			Message: "no session " + c.Param("id") + " (sessions expire after " + s.cfg.SessionTTL.String() + " idle)"}
	}
	return c.JSON(http.StatusOK, sess)
}

// apiDeleteSession is DELETE /api/sessions/:id.
func (s *Server) apiDeleteSession(c echo.Context) error {
	s.sessions.delete(c.Param("id"))
	return c.NoContent(http.StatusNoContent)
}
