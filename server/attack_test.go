package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The review's findings, replayed against a served stories260K: each gets a clean 4xx (never a
// 5xx, a hang or a crash), and the server still answers afterwards.

// TestHostileRequests: a table of hostile HTTP requests, through the whole stack.
func TestHostileRequests(t *testing.T) {
	s := mustNew(t, storiesConfig(t))
	ts := testServer(t, s)
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	planFormats := func(n int, distinct bool) string {
		var b strings.Builder
		b.WriteString(`{"preset":"qwen2.5-14b-1m","formats":[`)
		names := []string{"f16", "q8_0", "q4_0", "q8_0/q4_0"}
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if distinct {
				fmt.Fprintf(&b, `"f16/q%d"`, i)
			} else {
				fmt.Fprintf(&b, `%q`, names[i%len(names)])
			}
		}
		b.WriteString(`]}`)
		return b.String()
	}
	ab := func(extra string) string {
		return `{"model":"stories260K","prompt":"Once","n":4,"arms":["q8_0"]` + extra + `}`
	}
	for _, tc := range []struct {
		name, method, path, ctype, body string
		header                          []string
		status                          int
		want                            string
	}{
		{"CSRF: text/plain A/B", "POST", "/api/ab", "text/plain", ab(""), nil, 415, "application/json"},
		{"CSRF: form-encoded chat", "POST", "/v1/chat/completions", "application/x-www-form-urlencoded", `{"messages":[{"role":"user","content":"hi"}]}`, nil, 415, "application/json"},
		{"CSRF: cross-site JSON", "POST", "/api/ab", "application/json", ab(""), []string{"Origin", "https://evil.example"}, 403, "origin"},
		{"rebinding: A/B", "POST", "/api/ab", "application/json", ab(""), []string{"Host", "evil.example:8080"}, 421, "host"},
		{"window 1e9", "POST", "/api/ab", "application/json", ab(`,"window":1000000000`), nil, 400, "window 1000000000: out of range"},
		{"sinks 1e9", "POST", "/api/ab", "application/json", ab(`,"sinks":1000000000`), nil, 400, "sinks 1000000000: out of range"},
		{"arm +w1e9", "POST", "/api/ab", "application/json", `{"model":"stories260K","n":4,"arms":["q4_0+w1000000000"]}`, nil, 400, "window 1000000000: out of range"},
		{"arm +s maxint64", "POST", "/api/ab", "application/json", `{"model":"stories260K","n":4,"arms":["q4_0+s9223372036854775807"]}`, nil, 400, "sinks 9223372036854775807: out of range"},
		{"arm +s overflow", "POST", "/api/ab", "application/json", `{"model":"stories260K","n":4,"arms":["q4_0+s99999999999999999999"]}`, nil, 400, "arms"},
		{"arm +g NaN", "POST", "/api/ab", "application/json", `{"model":"stories260K","n":4,"arms":["q2k+gNaN"]}`, nil, 400, "K gain"},
		{"k_gain huge", "POST", "/api/ab", "application/json", ab(`,"k_gain":1e30`), nil, 400, "k_gain"},
		{"n huge", "POST", "/api/ab", "application/json", ab(`,"n":1000000000`), nil, 400, "n 1000000000"},
		{"n overflow", "POST", "/api/ab", "application/json", ab(`,"n":1e30`), nil, 400, "n"},
		{"too many arms", "POST", "/api/ab", "application/json", `{"model":"stories260K","arms":["f16","f16","f16","f16","f16","f16","f16","f16","f16"]}`, nil, 400, "at most 8"},
		{"max_tokens huge", "POST", "/v1/chat/completions", "application/json", `{"max_tokens":10000000000,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "max_tokens"},
		{"top_k huge", "POST", "/v1/completions", "application/json", `{"prompt":"a","top_k":2000000000}`, nil, 400, "top_k"},
		{"temperature NaN-ish", "POST", "/v1/completions", "application/json", `{"prompt":"a","temperature":1e400}`, nil, 400, "temperature"},
		{"top_p out of range", "POST", "/v1/completions", "application/json", `{"prompt":"a","top_p":7}`, nil, 400, "top_p"},
		{"plan: 100k repeated formats", "POST", "/api/plan", "application/json", planFormats(100000, false), nil, 400, "formats"},
		{"plan: too many distinct", "POST", "/api/plan", "application/json", planFormats(200, true), nil, 400, "formats"},
		{"plan: formats by query", "GET", "/api/plan?formats=" + strings.Repeat("f16,", 5000), "", "", nil, 400, "formats"},
		{"login: open redirect", "GET", "/login?next=/%09/evil.com", "", "", nil, 200, ""},
		{"deep JSON", "POST", "/v1/chat/completions", "application/json", strings.Repeat("[", 100000), nil, 400, "JSON"},
		{"binary body", "POST", "/v1/chat/completions", "application/json", "\x00\xff\xfe" + strings.Repeat("\x01", 5000), nil, 400, "JSON"},
		{"oversize body", "POST", "/api/ab", "application/json", `{"prompt":"` + strings.Repeat("a", 3<<20) + `"}`, nil, 413, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			for i := 0; i+1 < len(tc.header); i += 2 {
				if tc.header[i] == "Host" {
					req.Host = tc.header[i+1]
				}
				req.Header.Set(tc.header[i], tc.header[i+1])
			}
			r, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %.300s", r.StatusCode, tc.status, b)
			}
			if tc.want != "" && !strings.Contains(strings.ToLower(string(b)), strings.ToLower(tc.want)) {
				t.Errorf("answer %.300s lacks %q", b, tc.want)
			}
			if len(b) > 8<<10 {
				t.Errorf("answer of %d bytes", len(b))
			}
			if strings.Contains(tc.name, "open redirect") && strings.Contains(string(b), "evil.com") {
				t.Errorf("the login form keeps next=%q", "evil.com")
			}
		})
	}
	r, err := client.Get(ts.URL + "/healthz")
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("the server is down after the table: %v", err)
	}
	r.Body.Close()
}

// TestHostileFrames: garbage, oversize and out-of-range websocket messages each get an error
// message (or a close for an oversize frame); the socket and the server keep working.
func TestHostileFrames(t *testing.T) {
	cfg := storiesConfig(t)
	cfg.MaxMessageBytes = 64 << 10
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lab := dial(t, ctx, ts, "/ws/lab", nil)
	for _, msg := range []string{
		"", "\x00\xff", "null", "[]", "{", `{"type":7}`, `{"type":"start"}`, strings.Repeat("[", 50000),
		`{"type":"start","model":"stories260K","n":4,"arms":["q8_0"],"window":1000000000}`,
		`{"type":"start","model":"stories260K","n":4,"arms":["q8_0"],"sinks":99999999999}`,
		`{"type":"start","model":"stories260K","n":4,"arms":["q4_0+w1000000000"]}`,
		`{"type":"start","model":"stories260K","n":4,"arms":["q4_0+s9223372036854775807"]}`,
		`{"type":"start","model":"stories260K","n":99999999,"arms":["q4_0"]}`,
	} {
		if err := lab.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		m := wsRecv(t, ctx, lab)
		if m["type"] != "error" {
			t.Errorf("message %.60q: answer %v", msg, m)
		}
		if e, _ := m["error"].(string); len(e) > 2048 {
			t.Errorf("error of %d bytes", len(e))
		}
	}
	chat := dial(t, ctx, ts, "/ws/chat", nil)
	for _, msg := range []string{
		"\x00", `{"type":"chat","messages":[{"role":"user","content":"hi"}],"max_tokens":10000000000}`,
		`{"type":"chat","messages":[{"role":"user","content":"hi"}],"top_k":-1}`,
		`{"type":"chat","messages":[{"role":"user","content":"hi"}],"temperature":1e99}`,
		`{"type":"chat","session":"../../etc","messages":[{"role":"user","content":"hi"}]}`,
	} {
		if err := chat.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if m := wsRecv(t, ctx, chat); m["type"] != "error" {
			t.Errorf("chat message %.60q: answer %v", msg, m)
		}
	}
	// An oversize message closes that socket only.
	big := dial(t, ctx, ts, "/ws/chat", nil)
	_ = big.Write(ctx, websocket.MessageText, bytes.Repeat([]byte("a"), 128<<10))
	if _, _, err := big.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("oversize: %v", err)
	}
	// The first socket still answers.
	wsSend(t, ctx, lab, map[string]any{"type": "start", "model": storiesName, "prompt": "Once", "n": 2, "arms": []string{"q8_0"}})
	for {
		m := wsRecv(t, ctx, lab)
		if m["type"] == "error" {
			t.Fatalf("run: %v", m)
		}
		if m["type"] == "ab_done" {
			break
		}
	}
}

// TestSlowClients: a client that trickles its body is cut at the body deadline (408 or a
// closed connection) and one that never finishes its headers at ReadHeaderTimeout; neither
// holds the server.
func TestSlowClients(t *testing.T) {
	cfg := storiesConfig(t)
	cfg.BodyTimeout = 500 * time.Millisecond
	s := mustNew(t, cfg)
	ln, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeListener(ctx, ln) }()
	defer func() { cancel(); <-done }()
	addr := ln.Addr().String()

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"prompt\":\"", addr)
	start := time.Now()
	cut := false
	for time.Since(start) < 10*time.Second {
		if _, err := conn.Write([]byte("a")); err != nil {
			cut = true
			break
		}
		conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		b := make([]byte, 512)
		if n, err := conn.Read(b); n > 0 || (err != nil && !isTimeout(err)) {
			if n > 0 && !strings.Contains(string(b[:n]), " 408 ") {
				t.Errorf("answer %q", b[:n])
			}
			cut = true
			break
		}
	}
	if !cut || time.Since(start) > 5*time.Second {
		t.Errorf("a trickling client was held %v (cut %v)", time.Since(start), cut)
	}
	r, err := http.Get("http://" + addr + "/healthz")
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("healthz after a slow client: %v", err)
	}
	r.Body.Close()
	http.DefaultClient.CloseIdleConnections()
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestRapidWebsocketConnects: 1000 websocket connects in a burst (each closed at once, some
// dropped mid-handshake) leave no goroutine or session behind.
func TestRapidWebsocketConnects(t *testing.T) {
	s := mustNew(t, storiesConfig(t))
	ts := testServer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := runtime.NumGoroutine()
	url := "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws/chat"
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var failed sync.Map
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if i%10 == 0 { // a raw connection dropped mid-handshake
				c, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
				if err == nil {
					fmt.Fprintf(c, "GET /ws/chat HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n", strings.TrimPrefix(ts.URL, "http://"))
					c.Close()
				}
				return
			}
			c, _, err := websocket.Dial(ctx, url, nil)
			if err != nil {
				failed.Store(i, err)
				return
			}
			c.CloseNow()
		}(i)
	}
	wg.Wait()
	n := 0
	failed.Range(func(k, v any) bool {
		if n++; n < 3 {
			t.Errorf("connect %v: %v", k, v)
		}
		return true
	})
	if r, err := ts.Client().Get(ts.URL + "/healthz"); err != nil || r.StatusCode != 200 {
		t.Fatalf("healthz: %v", err)
	} else {
		r.Body.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+10 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before+10 {
		t.Errorf("%d goroutines after 1000 connects, %d before", g, before)
	}
}

// TestDisconnectMidStream: a client that goes away in the middle of a streamed completion
// frees its slot; the next request runs.
func TestDisconnectMidStream(t *testing.T) {
	fc := &forwardCounter{delay: 2 * time.Millisecond}
	cfg := storiesConfig(t)
	cfg.ForwardHook = fc.wrap
	cfg.MaxConcurrent = 1
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions",
			strings.NewReader(`{"prompt":"Once","max_tokens":400,"stream":true}`))
		req.Header.Set("Content-Type", "application/json")
		r, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		if _, err := r.Body.Read(buf); err != nil {
			t.Fatal(err)
		}
		cancel()
		r.Body.Close()
	}
	fc.settled(t)
	// The forward passes have stopped; the slot is released when the generation's goroutine
	// unwinds, which on a loaded machine can come a scheduling delay later: wait for it, bounded.
	deadline := time.Now().Add(10 * time.Second)
	for s.gate.running() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.gate.running(); got != 0 {
		t.Fatalf("%d generations still hold a slot 10 s after their clients went away", got)
	}
	r := do(t, s.Handler(), http.MethodPost, "/v1/completions", `{"prompt":"Once","max_tokens":2}`)
	if r.StatusCode != 200 {
		t.Fatalf("after disconnects: %d", r.StatusCode)
	}
}
