// Package server is kvlab's HTTP server: the pages (the planner at /plan), their static assets,
// and /healthz. Later parts (chat, lab, the JSON and OpenAI-compatible APIs) register their
// routes in routes, next to these.
package server

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/kvlab/kvlab/assets"
	"github.com/kvlab/kvlab/wasm/planview"
	"github.com/kvlab/kvlab/web"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// DefaultAddr is where `kvlab serve` listens when not told otherwise: loopback only.
const DefaultAddr = "127.0.0.1:8080"

// Config configures a Server.
type Config struct {
	// Addr is the TCP address to listen on (DefaultAddr when empty).
	Addr string
	// Logger receives request and lifecycle logs (slog.Default when nil).
	Logger *slog.Logger
}

// Server serves kvlab's pages and APIs.
type Server struct {
	cfg  Config
	echo *echo.Echo
	// wasmBytes is the size of the embedded calculator.
	wasmBytes int64
}

// assetPrefix is the URL path under which the embedded assets are served.
const assetPrefix = "/assets/"

// New builds a server from cfg with every route registered.
func New(cfg Config) *Server {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	s := &Server{cfg: cfg, echo: e}
	if st, err := fs.Stat(assets.FS, assets.WasmFile); err == nil {
		s.wasmBytes = st.Size()
	}
	e.Use(middleware.Recover())
	e.Use(middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURI: true, LogMethod: true, LogLatency: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			cfg.Logger.Debug("http", "method", v.Method, "uri", v.URI, "status", v.Status, "latency", v.Latency)
			return nil
		},
	}))
	s.routes()
	return s
}

// routes registers every route of the server, in one place.
func (s *Server) routes() {
	e := s.echo
	e.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/plan") })
	e.GET("/healthz", s.healthz)
	e.GET("/plan", s.plan)
	static := e.Group(assetPrefix, middleware.GzipWithConfig(middleware.GzipConfig{MinLength: 1024}))
	static.GET("*", echo.WrapHandler(http.StripPrefix(assetPrefix, http.FileServer(http.FS(assets.FS)))))
}

// Handler returns the server's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.echo }

// Addr is the configured listen address.
func (s *Server) Addr() string { return s.cfg.Addr }

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
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return web.PlanPage(d).Render(c.Request().Context(), c.Response())
}

// Serve listens on the configured address and serves until ctx is done, then shuts down
// gracefully, giving in-flight requests up to five seconds.
func (s *Server) Serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.ServeListener(ctx, ln)
}

// ServeListener is Serve on a listener the caller opened.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.echo, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
