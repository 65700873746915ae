package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
)

// Fuzz targets for every request decoder the network reaches (seed corpora in
// testdata/fuzz/<target>/): JSON bodies through the whole handler stack, the boundary
// middleware's headers, and /login's next. The websocket messages are FuzzParseClientMessage
// and FuzzParseLabMessage (unit_test.go).

// fuzzServer is one server without models shared by a fuzz target's runs.
func fuzzServer(f *testing.F) http.Handler {
	s, err := New(Config{Logger: quiet})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	return s.Handler()
}

var fuzzPaths = []string{"/v1/chat/completions", "/v1/completions", "/api/ab", "/api/plan"}

// FuzzJSONBodies: any body on any POST API is answered with a JSON error or a result, never a
// 5xx or a panic, and the answer is bounded.
func FuzzJSONBodies(f *testing.F) {
	h := fuzzServer(f)
	for i, b := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`,
		`{"model":"m","prompt":"a","max_tokens":10000000000}`,
		`{"model":"m","arms":["q4_0+s9223372036854775807"],"window":1000000000}`,
		`{"preset":"qwen2.5-14b-1m","ctx":"32k","formats":["f16","q8_0","f16"]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		`{"temperature":NaN}`, `[`, `""`, `{"a":` + strings.Repeat("[", 1000),
	} {
		f.Add(uint8(i), []byte(b))
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := fuzzPaths[int(route)%len(fuzzPaths)]
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body)))
		req.Host = testHost
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: status %d: %s", path, body, rec.Code, rec.Body.String())
		}
		if rec.Code >= 400 {
			var e apiErr
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Message == "" {
				t.Fatalf("%s: status %d with body %q", path, rec.Code, rec.Body.String())
			}
			if len(e.Error.Message) > maxErrorBytes+64 {
				t.Fatalf("%s: error of %d bytes", path, len(e.Error.Message))
			}
		}
	})
}

// FuzzBoundaryHeaders: hostile Host, Origin, Sec-Fetch-Site and Content-Type headers never
// panic the guard, and a request it lets change state has an allowed Host and either no
// browser origin or an allowed one.
func FuzzBoundaryHeaders(f *testing.F) {
	h := fuzzServer(f)
	f.Add("127.0.0.1:8080", "http://127.0.0.1:8080", "same-origin", "application/json", true)
	f.Add("evil.example", "http://evil.example", "", "text/plain", true)
	f.Add("[::1]:8080", "null", "cross-site", "application/json;charset=utf-8", false)
	f.Add("localhost", "http://localhost:80", "none", "application/vnd.x+json", true)
	f.Fuzz(func(t *testing.T, host, origin, site, ctype string, post bool) {
		method, path := http.MethodDelete, "/api/sessions/x"
		if post {
			method, path = http.MethodPost, "/api/plan"
		}
		req := httptest.NewRequest(method, path, strings.NewReader(`{"preset":"qwen2.5-14b-1m"}`))
		req.Host = host
		for k, v := range map[string]string{"Origin": origin, "Sec-Fetch-Site": site, "Content-Type": ctype} {
			if v != "" {
				req.Header[k] = []string{v}
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d", rec.Code)
		}
		if rec.Code < 400 {
			hn, _ := splitHost(host)
			if !(hn == "localhost" || strings.HasPrefix(hn, "127.") || hn == "::1" || strings.HasPrefix(hn, "0:0:0:0:0:0:0:1") || strings.HasPrefix(hn, "::ffff:127.")) {
				t.Fatalf("host %q passed", host)
			}
			if origin != "" && !strings.HasPrefix(strings.ToLower(origin), "http") {
				t.Fatalf("origin %q passed", origin)
			}
			if post && !jsonContentType(ctype) {
				t.Fatalf("content type %q passed", ctype)
			}
		}
	})
}

// FuzzSafeNext: /login's next is "/" or a path on this server.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/system", "//evil.com", "/\\evil.com", "/\t/evil.com", "https://evil.com", "/%2F/evil", "/\u2028//x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		if got == "/" {
			return
		}
		if got != next || !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.ContainsRune(got, '\\') {
			t.Fatalf("safeNext(%q) = %q", next, got)
		}
		for _, r := range got {
			if unicode.IsControl(r) {
				t.Fatalf("safeNext(%q) keeps a control character", next)
			}
		}
	})
}
