package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/kvlab/kvlab/internal/discover"
	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/kvcache"
	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: every generation, websocket
// and model worker must be gone once a test's server is closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// quiet is a logger that drops everything.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// mustNew builds a server and closes it when the test ends.
func mustNew(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// storiesName is the name tests give stories260K.
const storiesName = "stories260K"

// fakeMemory is a machine with 16 GiB free.
func fakeMemory() (MemInfo, error) {
	return MemInfo{TotalBytes: 32 << 30, FreeBytes: 16 << 30, Source: "test"}, nil
}

// storiesConfig is a configuration serving the stories260K fixture (the test skips without it,
// and fails under CI=true).
func storiesConfig(t *testing.T) Config {
	t.Helper()
	m, err := discover.Inspect(fixtures.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	m.Name = storiesName
	return Config{Models: []discover.Model{m}, Memory: fakeMemory, Threads: 1}
}

// forwardCounter counts forward passes and optionally slows each one.
type forwardCounter struct {
	n     atomic.Int64
	delay time.Duration
}

func (fc *forwardCounter) wrap(f ForwardFunc) ForwardFunc {
	return func(tokens []int32, c *kvcache.Cache, logits []float32) error {
		fc.n.Add(1)
		if fc.delay > 0 {
			time.Sleep(fc.delay)
		}
		return f(tokens, c, logits)
	}
}

// settled waits until the count has not moved for a while and returns it.
func (fc *forwardCounter) settled(t *testing.T) int64 {
	t.Helper()
	last := fc.n.Load()
	for i := 0; i < 100; i++ {
		time.Sleep(fc.delay*3 + 20*time.Millisecond)
		now := fc.n.Load()
		if now == last {
			return now
		}
		last = now
	}
	t.Fatalf("forward passes keep running: %d", last)
	return 0
}

// testServer serves s on an httptest server closed at the end of the test.
func testServer(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		ts.Client().CloseIdleConnections()
		http.DefaultClient.CloseIdleConnections()
	})
	return ts
}

// do sends a request with an optional JSON body and headers (name, value pairs) to h.
func do(t *testing.T, h http.Handler, method, target, body string, header ...string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	req.Host = testHost
	if body != "" || method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		}
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// decode reads a JSON response body into v.
func decode(t *testing.T, r *http.Response, v any) {
	t.Helper()
	defer r.Body.Close()
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		t.Fatalf("response is not JSON: %v", err)
	}
}

// apiErr is the error document.
type apiErr struct {
	Error struct {
		Message, Type, Code, Param string
	}
}

// dial opens a websocket to path on ts.
func dial(t *testing.T, ctx context.Context, ts *httptest.Server, path string, header http.Header) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+path, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", path, err, status)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// wsSend writes a JSON message.
func wsSend(t *testing.T, ctx context.Context, c *websocket.Conn, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// wsRecv reads one JSON message into a map.
func wsRecv(t *testing.T, ctx context.Context, c *websocket.Conn) map[string]any {
	t.Helper()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("message %q is not JSON: %v", b, err)
	}
	return m
}

// testHost is the Host header of the requests do and get send: one the allow-list takes
// (httptest's default, example.com, is not).
const testHost = "127.0.0.1:8080"

// listen opens a loopback listener on a free port.
func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
