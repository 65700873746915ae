package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, h http.Handler, target string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Host = testHost
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

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRoutes(t *testing.T) {
	h := mustNew(t, Config{}).Handler()
	for _, tc := range []struct {
		name, target string
		status       int
		ctype        string
		contains     []string
	}{
		{"health", "/healthz", 200, "application/json", []string{`"status":"ok"`}},
		{"plan", "/plan?ctx=32k&budget_gib=3.25", 200, "text/html",
			[]string{`id="plan-form"`, `q8_0/q8_0: KV 3264 MiB fits budget 3328 MiB`, `<svg`, `data-wasm="/assets/calc.wasm"`, `Calibration example`}},
		{"bad input", "/plan?ctx=-5", 400, "text/html", []string{`id="plan-error"`, "ctx: ", "at least 1 token", `id="plan-form"`}},
		{"unknown preset", "/plan?preset=nope", 400, "text/html", []string{`unknown preset: model &#34;nope&#34;`}},
		{"wasm", "/assets/calc.wasm", 200, "application/wasm", nil},
		{"glue", "/assets/wasm_exec.js", 200, "javascript", []string{"Go"}},
		{"script", "/assets/plan.js", 200, "javascript", []string{"kvlab.plan"}},
		{"style", "/assets/kvlab.css", 200, "text/css", nil},
		{"missing asset", "/assets/nope.js", 404, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := get(t, h, tc.target)
			b := body(t, r)
			if r.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %.300s", r.StatusCode, tc.status, b)
			}
			if ct := r.Header.Get("Content-Type"); !strings.Contains(ct, tc.ctype) {
				t.Errorf("content type %q, want %q", ct, tc.ctype)
			}
			for _, want := range tc.contains {
				if !strings.Contains(b, want) {
					t.Errorf("body lacks %q", want)
				}
			}
		})
	}
	if r := get(t, h, "/"); r.StatusCode != http.StatusFound || r.Header.Get("Location") != "/plan" {
		t.Errorf("/: %d to %q", r.StatusCode, r.Header.Get("Location"))
	}
	if r := get(t, h, "/assets/calc.wasm", "Accept-Encoding", "gzip"); r.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("calc.wasm is not compressed: %v", r.Header)
	}
}

// TestServeShutsDown serves on a loopback port and stops cleanly when the context ends.
func TestServeShutsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := mustNew(t, Config{})
	go func() { done <- srv.ServeListener(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
}
