package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestHostPolicy: the Host allow-list of each kind of bound address.
func TestHostPolicy(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		extra []string
		ok    []string
		no    []string
	}{
		{"127.0.0.1:8080", nil, []string{"127.0.0.1", "localhost", "::1", "127.0.0.2"},
			[]string{"evil.example", "192.168.1.5", "localhost.evil.example", ""}},
		{"127.0.0.1:8080", []string{"kvlab.lan", "*.dev.lan:8080"}, []string{"kvlab.lan", "a.dev.lan"}, []string{"evil.lan"}},
		{"localhost:8080", nil, []string{"localhost", "127.0.0.1"}, []string{"evil.example"}},
		{"192.168.1.5:8080", nil, []string{"192.168.1.5", "localhost"}, []string{"192.168.1.6", "evil.example"}},
		{"0.0.0.0:8080", nil, []string{"192.168.1.5", "10.0.0.1", "localhost"}, []string{"evil.example"}},
		{"myhost:8080", nil, []string{"myhost", "localhost"}, []string{"evil.example"}},
	} {
		p, err := newHostPolicy(tc.addr, tc.extra)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range tc.ok {
			if !p.allowed(h) {
				t.Errorf("%s %v: %q refused", tc.addr, tc.extra, h)
			}
		}
		for _, h := range tc.no {
			if p.allowed(h) {
				t.Errorf("%s %v: %q allowed", tc.addr, tc.extra, h)
			}
		}
	}
	if _, err := newHostPolicy("127.0.0.1:8080", []string{"a/b"}); err == nil {
		t.Error("a host with a slash was taken")
	}
}

// TestAPIKeyStrength: keys that can never match or are short for a public bind are refused.
func TestAPIKeyStrength(t *testing.T) {
	for _, tc := range []struct {
		addr, key, want string
	}{
		{"0.0.0.0:0", " ", "whitespace"},
		{"0.0.0.0:0", "a", "too short"},
		{"0.0.0.0:0", "short-key", "too short"},
		{"0.0.0.0:0", " 0123456789abcdef0123", "whitespace"},
		{"0.0.0.0:0", "0123456789ab\tcdef0123", "whitespace"},
		{"127.0.0.1:0", " ", "whitespace"},
	} {
		_, err := New(Config{Addr: tc.addr, APIKey: tc.key, Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s key %q: %v, want %q", tc.addr, tc.key, err, tc.want)
		}
	}
	s := mustNew(t, Config{Addr: "0.0.0.0:0", APIKey: "0123456789abcdef"})
	_ = s
}

// TestBoundary: DNS rebinding, cross-site and "simple" requests are refused on every kind of
// route before any handler runs; the server's own pages and non-browser clients pass.
func TestBoundary(t *testing.T) {
	s := mustNew(t, Config{})
	h := s.Handler()
	const ab = `{"model":"x","arms":["q8_0"]}`
	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		status                   int
	}{
		{"rebound host, page", "GET", "/plan", "", []string{"Host", "evil.example:8080"}, 421},
		{"rebound host, api", "GET", "/api/runs", "", []string{"Host", "evil.example:8080"}, 421},
		{"rebound host, healthz", "GET", "/healthz", "", []string{"Host", "evil.example"}, 421},
		{"rebound host, assets", "GET", "/assets/kvlab.css", "", []string{"Host", "evil.example"}, 421},
		{"rebound host, websocket", "GET", "/ws/chat", "", []string{"Host", "evil.example:8080", "Upgrade", "websocket", "Origin", "http://evil.example:8080"}, 421},
		{"rebound host, A/B", "POST", "/api/ab", ab, []string{"Host", "evil.example:8080", "Origin", "http://evil.example:8080"}, 421},
		{"no host", "GET", "/plan", "", []string{"Host", ""}, 421},
		{"text/plain A/B", "POST", "/api/ab", ab, []string{"Content-Type", "text/plain"}, 415},
		{"form A/B", "POST", "/api/ab", ab, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415},
		{"multipart chat", "POST", "/v1/chat/completions", ab, []string{"Content-Type", "multipart/form-data; boundary=x"}, 415},
		{"no content type", "POST", "/v1/completions", ab, []string{"Content-Type", ""}, 415},
		{"text/plain plan", "POST", "/api/plan", `{"formats":["f16"]}`, []string{"Content-Type", "text/plain;charset=UTF-8"}, 415},
		{"cross-site A/B", "POST", "/api/ab", ab, []string{"Origin", "https://evil.example"}, 403},
		{"other port A/B", "POST", "/api/ab", ab, []string{"Origin", "http://127.0.0.1:9999"}, 403},
		{"null origin A/B", "POST", "/api/ab", ab, []string{"Origin", "null"}, 403},
		{"cross-site fetch metadata", "POST", "/api/ab", ab, []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"same-site fetch metadata", "POST", "/v1/chat/completions", ab, []string{"Sec-Fetch-Site", "same-site"}, 403},
		{"cross-site delete", "DELETE", "/api/sessions/abc", "", []string{"Origin", "https://evil.example"}, 403},
		{"cross-site websocket", "GET", "/ws/lab", "", []string{"Upgrade", "websocket", "Origin", "https://evil.example"}, 403},
		{"other-port websocket", "GET", "/ws/chat", "", []string{"Upgrade", "websocket", "Origin", "http://localhost:3000"}, 403},
		{"cross-site login", "POST", "/login", "key=x", []string{"Content-Type", "application/x-www-form-urlencoded", "Origin", "https://evil.example"}, 403},
		// What passes.
		{"own page delete", "DELETE", "/api/sessions/abc", "", []string{"Origin", "http://127.0.0.1:8080", "Sec-Fetch-Site", "same-origin"}, 204},
		{"own page by name", "DELETE", "/api/sessions/abc", "", []string{"Origin", "http://localhost:8080"}, 204},
		{"program, no origin", "DELETE", "/api/sessions/abc", "", nil, 204},
		{"json with charset", "POST", "/api/plan", `{"preset":"qwen2.5-14b-1m","ctx":"32k"}`, []string{"Content-Type", "application/json; charset=utf-8"}, 200},
		{"cross-site GET page", "GET", "/plan", "", []string{"Sec-Fetch-Site", "cross-site"}, 200},
		{"localhost host", "GET", "/healthz", "", []string{"Host", "localhost:8080"}, 200},
		{"behind a TLS proxy", "DELETE", "/api/sessions/abc", "", []string{"Host", "localhost", "Origin", "https://localhost"}, 204},
		{"proxy, other port", "DELETE", "/api/sessions/abc", "", []string{"Host", "localhost", "Origin", "https://localhost:8443"}, 403},
		{"ipv6 loopback host", "GET", "/healthz", "", []string{"Host", "[::1]:8080"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, h, tc.method, tc.path, tc.body, tc.header...)
			if r.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", r.StatusCode, tc.status, body(t, r))
			}
			if r.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(r.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Errorf("security headers missing: %v", r.Header)
			}
		})
	}
}

// TestSafeNext: /login's next is a path on this server, never another site.
func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/system": "/system", "/runs/3?x=1": "/runs/3?x=1", "": "/", "//evil.com": "/", "/\\evil.com": "/",
		"/\t/evil.com": "/", "/\n/evil.com": "/", "/\r//evil.com": "/", "https://evil.com": "/", "evil.com": "/",
		"/a\\b": "/", "/\x00": "/", "/\u0085/evil.com": "/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
	s := mustNew(t, Config{})
	r := get(t, s.Handler(), "/login?next=/%09/evil.com")
	if b := body(t, r); strings.Contains(b, "evil.com") {
		t.Errorf("login page keeps the hostile next: %s", b)
	}
}

// TestCSRFToken: with an API key, a state-changing request authenticated by the login cookie
// needs the CSRF token; a bearer token does not.
func TestCSRFToken(t *testing.T) {
	const key = "0123456789abcdef-key"
	s := mustNew(t, Config{Addr: "127.0.0.1:0", APIKey: key})
	h := s.Handler()
	cookie := authCookie + "=" + cookieValue(key)
	for _, tc := range []struct {
		name   string
		header []string
		status int
	}{
		{"cookie, no token", []string{"Cookie", cookie}, 403},
		{"cookie, wrong token", []string{"Cookie", cookie, csrfHeader, "00"}, 403},
		{"cookie and token", []string{"Cookie", cookie, csrfHeader, csrfValue(key)}, 204},
		{"bearer", []string{"Authorization", "Bearer " + key}, 204},
		{"nothing", nil, 401},
	} {
		r := do(t, h, http.MethodDelete, "/api/sessions/abc", "", tc.header...)
		if r.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, r.StatusCode, tc.status)
		}
	}
}
