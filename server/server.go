// Package server is kvlab's HTTP server: the dashboard pages (/plan, /chat, /lab, /runs,
// /system), chat and live A/B over websockets, the OpenAI-compatible API (/v1), kvlab's JSON API
// (/api, documented in docs/api.md), Prometheus metrics (/metrics) and /healthz. Every route is
// registered in routes.
//
// Generations run on the native engine (native/model) with the KV cache in the format the auto
// KV-tier policy (plan/calc) picks at load, or the one the user set. At most MaxConcurrent run
// at once; up to MaxQueue more wait, and past that a request gets a 503 "busy" JSON error.
package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kvlab/kvlab/assets"
	"github.com/kvlab/kvlab/internal/discover"
	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/backends"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/runner"
	"github.com/kvlab/kvlab/plan/planview"
	"github.com/kvlab/kvlab/web"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultAddr is where `kvlab serve` listens when not told otherwise: loopback only.
const DefaultAddr = "127.0.0.1:8080"

// KVBudgetOff is Config.KVBudget for contiguous caches (no paging).
const KVBudgetOff = -1

// Defaults of Config's limits.
const (
	DefaultMaxConcurrent   = 4
	DefaultBatch           = 16
	DefaultBatchGather     = runner.DefaultArrival
	DefaultMaxQueue        = 64
	DefaultQueueWait       = 2 * time.Minute
	DefaultMaxBodyBytes    = 2 << 20
	DefaultMaxMessageBytes = 2 << 20
	DefaultSessionTTL      = time.Hour
	DefaultMaxSessions     = 256
	DefaultShutdownGrace   = 10 * time.Second
)

// Config configures a Server. The zero value serves the planner on DefaultAddr with no models.
type Config struct {
	// Addr is the TCP address to listen on (DefaultAddr when empty).
	Addr string
	// Logger receives request and lifecycle logs (slog.Default when nil).
	Logger *slog.Logger
	// APIKey, when set, is required on every route but /healthz, /login and /assets/: as a
	// bearer token (Authorization: Bearer KEY) or the cookie /login sets. It must be set when
	// Addr is not a loopback address.
	APIKey string
	// Models are the models the server offers, loaded on first use (Preload loads some at
	// start). Model names must be unique.
	Models []discover.Model
	// Places describes where models were searched, for the page that says how to add one.
	Places []string
	// KV is the KV format of every cache: "auto" (or empty) runs the auto KV-tier policy at
	// load with the machine's free memory; a format or K/V pair ("q8_0/q4_0") is used as given.
	KV string
	// Ctx is the context of each sequence in tokens (cells per cache); 0 means the model's
	// trained context, at most DefaultCtx.
	Ctx int
	// KVWindow and KVSinks size the FP16 overlay of every cache: the most recent KVWindow cells
	// and the first KVSinks cells are also kept exact, over the compressed cache (0: none).
	KVWindow, KVSinks int
	// KVResident, when positive (Device "cuda"), keeps the first KVResident cells of every
	// cache on the GPU and the cells past them in a host-spill tail in pinned host memory
	// (backend.LoadOptions.KVResident); the KV policy and the memory check then budget the
	// GPU part. KVSpillChunk is the tail's chunk in cells (0: the engine's default).
	KVResident, KVSpillChunk int
	// Threads is the forward pass's goroutines per model; 0 uses every CPU.
	Threads int
	// Device is where the forward pass runs: "cpu" (or empty) or "cuda". With cuda, New opens
	// the GPU (device 0) once, failing without a driver (an error matching cuda.ErrNoCUDA);
	// every model is uploaded to it at load, each generation slot gets a KV cache on it, and
	// the auto KV-tier policy budgets against its free memory (unless Memory is set).
	Device string
	// MaxConcurrent is the most generations (chat replies, completions, A/B runs) running at
	// once; MaxQueue the most waiting for a slot (0 means DefaultMaxQueue, negative none), each
	// for at most QueueWait.
	MaxConcurrent int
	MaxQueue      int
	QueueWait     time.Duration
	// Batch is the most generations one CPU forward pass runs (continuous batching: the decode
	// token of each running generation and a chunk of a waiting prompt share the pass, each
	// weight read once); 0 means DefaultBatch, 1 runs each generation's passes on its own.
	Batch int
	// BatchGather is continuous batching's arrival gather: the most a prompt pass started
	// from idle waits for more prompts to share it, so that requests sent together share one
	// prompt pass instead of all but the first waiting behind its pass (the wait ends sooner
	// once no prompt has arrived for runner.DefaultArrivalGap); 0 means DefaultBatchGather
	// (the runner's default), negative no wait.
	BatchGather time.Duration
	// KVBudget is the memory of each model's KV page pool on the CPU (pages of 64 cells): a
	// generation is admitted when the pages it may fill are free and waits otherwise, and chats
	// that start alike share their prefix pages. 0 pages the caches whenever the format pair
	// allows it, with room for MaxConcurrent generations of the whole context within the KV
	// policy's share of free memory; KVBudgetOff (negative) gives every cache its whole context
	// up front.
	KVBudget int64
	// MaxBodyBytes limits a request body; MaxMessageBytes a websocket message.
	MaxBodyBytes    int64
	MaxMessageBytes int64
	// SessionTTL is how long an idle chat session is kept; MaxSessions how many at most.
	SessionTTL  time.Duration
	MaxSessions int
	// HistoryPath is the run history database (the SQLite file `kvlab runs` reads); empty keeps
	// the runs in memory.
	HistoryPath string
	// DataDir, when set, is where chat sessions and KV snapshots of their turns persist across
	// restarts (persist.go); SessionBytes bounds the snapshots per model (DefaultSessionBytes
	// when 0).
	DataDir      string
	SessionBytes int64
	// ShutdownGrace is how long shutdown lets in-flight generations finish before cancelling
	// them.
	ShutdownGrace time.Duration
	// Memory reports the free memory the KV policy budgets against (HostMemory when nil).
	Memory func() (MemInfo, error)
	// OriginPatterns are extra hosts (path.Match patterns, e.g. "example.com:*") whose pages may
	// open the websockets and send state-changing requests; the server's own origin always may.
	OriginPatterns []string
	// AllowHosts are host names (or path.Match patterns) the server answers to besides the
	// bound address, localhost and loopback IPs (--allow-host); any other Host header is 421.
	AllowHosts []string
	// BodyTimeout bounds reading a request body (DefaultBodyTimeout when zero).
	BodyTimeout time.Duration

	// ForwardHook, when set, wraps every engine's forward pass: instrumentation, and tests that
	// count the passes or slow them down to press Stop mid-reply.
	ForwardHook func(ForwardFunc) ForwardFunc

	userPair kvq.Pair
	// backend is the device opened for Device (native/backends).
	backend backend.Backend
}

// Server serves kvlab's pages and APIs.
type Server struct {
	cfg      Config
	log      *slog.Logger
	hosts    *hostPolicy
	echo     *echo.Echo
	metrics  *metrics
	models   *registry
	gate     *gate
	sessions *sessionStore
	history  *runHistory
	started  time.Time
	// wasmBytes is the size of the embedded calculator.
	wasmBytes int64

	// base is cancelled when shutdown stops waiting: every generation and websocket watches it.
	base       context.Context
	cancelBase context.CancelFunc
	// sockets is cancelled after base, once the cancelled generations have said so: it closes
	// the websockets.
	sockets       context.Context
	cancelSockets context.CancelFunc
	// work tracks websocket handlers and background generations, which http.Server.Shutdown
	// does not wait for.
	work      sync.WaitGroup
	workMu    sync.Mutex
	closing   bool
	closeOnce sync.Once
	closeErr  error
}

// assetPrefix is the URL path under which the embedded assets are served.
const assetPrefix = "/assets/"

// IsLoopback reports whether a listen address only accepts local connections: a loopback IP or
// "localhost". An empty host (all interfaces) is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// New builds a server from cfg with every route registered. It fails on a configuration that
// is unsafe (a non-loopback address without an API key) or invalid.
func New(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if !IsLoopback(cfg.Addr) && cfg.APIKey == "" {
		return nil, fmt.Errorf("server: %s is not a loopback address: set an API key (--api-key) to serve beyond this machine", cfg.Addr)
	}
	if err := checkAPIKey(cfg.APIKey, !IsLoopback(cfg.Addr)); err != nil {
		return nil, err
	}
	hosts, err := newHostPolicy(cfg.Addr, cfg.AllowHosts)
	if err != nil {
		return nil, err
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if kv := strings.TrimSpace(cfg.KV); kv != "" && kv != "auto" {
		p, err := kvq.ParsePair(kv)
		if err != nil {
			return nil, fmt.Errorf("server: --kv: %w", err)
		}
		cfg.userPair = p
	}
	if cfg.Ctx < 0 || cfg.MaxConcurrent < 0 || cfg.Threads < 0 || cfg.Batch < 0 {
		return nil, errors.New("server: ctx, threads, max concurrent and batch must not be negative")
	}
	if err := checkConfigBounds(&cfg); err != nil {
		return nil, err
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&cfg.MaxConcurrent, DefaultMaxConcurrent)
	def(&cfg.Batch, DefaultBatch)
	def(&cfg.MaxSessions, DefaultMaxSessions)
	switch {
	case cfg.MaxQueue == 0:
		cfg.MaxQueue = DefaultMaxQueue
	case cfg.MaxQueue < 0:
		cfg.MaxQueue = 0
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = DefaultQueueWait
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.SessionBytes <= 0 {
		cfg.SessionBytes = DefaultSessionBytes
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	seen := map[string]bool{}
	for _, m := range cfg.Models {
		if seen[m.Name] {
			return nil, fmt.Errorf("server: two models are named %q", m.Name)
		}
		seen[m.Name] = true
	}
	switch cfg.Device {
	case "", DeviceCPU:
		cfg.Device = DeviceCPU
	case DeviceCUDA:
	default:
		return nil, fmt.Errorf("server: --device %q: want cpu or cuda", cfg.Device)
	}
	if cfg.KVSpillChunk < 0 {
		return nil, fmt.Errorf("server: spill chunk %d: must not be negative", cfg.KVSpillChunk)
	}
	if err := CheckKVResident(cfg.KVResident, cfg.Device, kvcache.Config{Window: cfg.KVWindow, Sinks: cfg.KVSinks}, ""); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	// Without a driver "cuda" fails with the one-line "no CUDA driver found: …", as is.
	be, err := backends.Open(cfg.Device)
	if err != nil {
		return nil, err
	}
	cfg.backend = be
	if cfg.Memory == nil {
		if _, err := be.Memory(); !errors.Is(err, backend.ErrNoMemoryReport) {
			cfg.Memory = func() (MemInfo, error) {
				m, err := be.Memory()
				return MemInfo{TotalBytes: m.TotalBytes, FreeBytes: m.FreeBytes, Source: m.Source}, err
			}
		}
	}
	if cfg.Memory == nil {
		cfg.Memory = DefaultMemory
	}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	s := &Server{cfg: cfg, log: cfg.Logger, hosts: hosts, echo: e, metrics: newMetrics(), started: time.Now()}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	s.sockets, s.cancelSockets = context.WithCancel(context.Background())
	s.models = newRegistry(&s.cfg, cfg.MaxConcurrent, s.metrics, s.log)
	s.gate = newGate(cfg.MaxConcurrent, cfg.MaxQueue, cfg.QueueWait, s.metrics)
	s.sessions = newSessionStore(cfg.SessionTTL, cfg.MaxSessions)
	if cfg.DataDir != "" {
		dir, err := persistDirs(cfg.DataDir)
		if err != nil {
			cfg.backend.Close()
			return nil, err
		}
		s.sessions.files = &sessionFiles{dir: dir, log: cfg.Logger}
		for _, sess := range s.sessions.files.load(cfg.SessionTTL, cfg.MaxSessions) {
			s.sessions.m[sess.ID] = sess
		}
	}
	h, err := openHistory(cfg.HistoryPath)
	if err != nil {
		cfg.backend.Close()
		return nil, fmt.Errorf("server: run history: %w", err)
	}
	s.history = h
	if st, err := fs.Stat(assets.FS, assets.WasmFile); err == nil {
		s.wasmBytes = st.Size()
	}
	e.HTTPErrorHandler = s.errorHandler
	e.Use(middleware.Recover())
	e.Use(s.observe)
	e.Use(s.securityHeaders)
	e.Use(s.guard)
	e.Use(s.authenticate)
	s.routes()
	return s, nil
}

// routes registers every route of the server, in one place.
func (s *Server) routes() {
	e := s.echo
	e.GET("/", s.home)
	e.GET("/healthz", s.healthz)
	e.GET("/favicon.ico", favicon)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})))

	// Pages.
	e.GET("/plan", s.plan)
	e.GET("/chat", s.chatPage)
	e.GET("/lab", s.labPage)
	e.GET("/runs", s.runsPage)
	e.GET("/runs/:id", s.runPage)
	e.GET("/system", s.systemPage)
	e.GET("/login", s.loginPage)
	e.POST("/login", s.login)

	// Websockets.
	e.GET("/ws/chat", s.chatSocket)
	e.GET("/ws/lab", s.labSocket)

	// OpenAI-compatible API.
	e.GET("/v1/models", s.openaiModels)
	e.POST("/v1/chat/completions", s.chatCompletions)
	e.POST("/v1/completions", s.completions)

	// kvlab's JSON API (docs/api.md).
	e.GET("/api/models", s.apiModels)
	e.GET("/api/system", s.apiSystem)
	e.GET("/api/plan", s.apiPlan)
	e.POST("/api/plan", s.apiPlan)
	e.GET("/api/sessions/:id", s.apiSession)
	e.DELETE("/api/sessions/:id", s.apiDeleteSession)
	e.GET("/api/runs", s.apiRuns)
	e.GET("/api/runs/:id", s.apiRun)
	e.POST("/api/ab", s.apiAB)

	static := e.Group(assetPrefix, middleware.GzipWithConfig(middleware.GzipConfig{MinLength: 1024}))
	static.GET("*", echo.WrapHandler(http.StripPrefix(assetPrefix, http.FileServer(http.FS(assets.FS)))))
}

// favicon is /favicon.ico, which browsers ask for on every page: the embedded SVG icon.
func favicon(c echo.Context) error {
	b, err := assets.FS.ReadFile("favicon.svg")
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=86400")
	return c.Blob(http.StatusOK, "image/svg+xml", b)
}

// Handler returns the server's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.echo }

// Addr is the configured listen address.
func (s *Server) Addr() string { return s.cfg.Addr }

// Preload loads the named models now (all of them when names is empty), so that a bad file
// fails at start and the KV policy's choice is logged before the first request.
func (s *Server) Preload(names ...string) error {
	if len(names) == 0 {
		names = s.models.names()
	}
	for _, n := range names {
		if _, err := s.models.get(n); err != nil {
			return err
		}
	}
	return nil
}

// observe logs each request (its path only: a query may carry a token) and counts it.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		s.metrics.request(c.Path(), status)
		s.log.Debug("http", "method", c.Request().Method, "path", c.Request().URL.Path, "status", status, "latency", time.Since(start))
		return nil
	}
}

// securityHeaders sets headers that keep the pages from being framed or sniffed, and a content
// security policy that allows only the server's own scripts (and the calculator's wasm).
func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
		return next(c)
	}
}

// home sends the browser to the chat when there is a model, else to the planner.
func (s *Server) home(c echo.Context) error {
	if len(s.cfg.Models) > 0 {
		return c.Redirect(http.StatusFound, "/chat")
	}
	return c.Redirect(http.StatusFound, "/plan")
}

// healthz reports that the server is up.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// plan renders the planner page for the query's form fields. A bad field still renders the
// page, with the error in place of the results and status 400.
func (s *Server) plan(c echo.Context) error {
	values := c.QueryParams()
	status := http.StatusOK
	var results string
	if res, err := planview.Compute(values, nil); err != nil {
		status, results = http.StatusBadRequest, planview.RenderError(err)
	} else {
		results = planview.Render(res)
	}
	d := web.PlanData{
		Values: values, Results: results, Calibration: planview.Calibration(),
		WasmURL: assetPrefix + assets.WasmFile, WasmBytes: s.wasmBytes, AssetBase: assetPrefix,
	}
	if s.cfg.Device == DeviceCPU {
		d.KernelNote = kvq.KernelSummary()
	}
	d.Quality = s.quality()
	return s.renderPage(c, status, web.PlanPage(d))
}

// Serve listens on the configured address and serves until ctx is done, then shuts down
// gracefully (see ServeListener).
func (s *Server) Serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.ServeListener(ctx, ln)
}

// ServeListener is Serve on a listener the caller opened. When ctx is done it refuses new
// generations, lets in-flight requests and generations finish for up to ShutdownGrace, then
// cancels what still runs, closes the websockets, waits for every handler to return, and
// closes the models and the run history (Close).
func (s *Server) ServeListener(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.echo, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		BaseContext: func(net.Listener) context.Context { return s.base }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	s.gate.draining.Store(true)
	grace, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	shutdownErr := srv.Shutdown(grace)
	s.waitGenerations(grace)
	s.workMu.Lock()
	s.closing = true
	s.workMu.Unlock()
	s.cancelBase()
	s.closeSockets()
	if shutdownErr != nil {
		srv.Close()
	}
	s.work.Wait()
	if serveErr == nil {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr = err
		}
	}
	if err := s.Close(); err != nil && serveErr == nil {
		serveErr = err
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// closeSockets closes the websockets once the cancelled generations have released their slots
// (and told their pages), or after a second.
func (s *Server) closeSockets() {
	wait, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.waitGenerations(wait)
	s.cancelSockets()
}

// waitGenerations waits until no generation runs or ctx is done.
func (s *Server) waitGenerations(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for s.gate.running() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close cancels whatever still runs, waits for it, and releases the models and the run
// history. It is safe to call more than once; ServeListener calls it on shutdown.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.gate.draining.Store(true)
		s.workMu.Lock()
		s.closing = true
		s.workMu.Unlock()
		s.cancelBase()
		s.closeSockets()
		s.work.Wait()
		s.models.close()
		s.closeErr = s.history.close()
		if err := s.cfg.backend.Close(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}

// enter registers a long-lived piece of work (a websocket, a background generation) that Close
// and shutdown wait for; it reports false once the server is closing. Each true is paired with
// leave.
func (s *Server) enter() bool {
	s.workMu.Lock()
	defer s.workMu.Unlock()
	if s.closing {
		return false
	}
	s.work.Add(1)
	return true
}

func (s *Server) leave() { s.work.Done() }
