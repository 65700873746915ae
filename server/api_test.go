package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestPages renders every page of a server without models: each is 200 HTML in the one layout,
// and the chat and lab say how to add a model.
func TestPages(t *testing.T) {
	s := mustNew(t, Config{Places: []string{"kvlab: /home/x/.cache/kvlab/models"}})
	h := s.Handler()
	for _, tc := range []struct {
		path     string
		contains []string
	}{
		{"/chat", []string{`id="no-models"`, "kvlab serve --model", "/home/x/.cache/kvlab/models", `aria-current="page"`}},
		{"/lab", []string{`id="no-models"`}},
		{"/runs", []string{`id="no-runs"`}},
		{"/system", []string{`id="sys-device"`, "CPU (pure Go engine)"}},
		{"/login", []string{`name="key"`}},
		{"/plan", []string{`id="to-lab" href="/lab?arms=f16%2Cq8_0%2Cq8_0%2Fq4_0`}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := do(t, h, http.MethodGet, tc.path, "")
			b := body(t, r)
			if r.StatusCode != http.StatusOK || !strings.Contains(r.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("status %d %s", r.StatusCode, r.Header.Get("Content-Type"))
			}
			for _, want := range append(tc.contains, `<nav aria-label="Pages">`, `href="/lab"`) {
				if !strings.Contains(b, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			if r.Header.Get("Content-Security-Policy") == "" {
				t.Error("no content security policy")
			}
		})
	}
}

// TestJSONAPI checks the documented JSON endpoints that need no model.
func TestJSONAPI(t *testing.T) {
	h := mustNew(t, Config{}).Handler()

	var plan struct {
		Report struct {
			Policy struct {
				Choice string `json:"choice"`
				Reason string `json:"reason"`
			} `json:"policy"`
		} `json:"report"`
	}
	r := do(t, h, http.MethodPost, "/api/plan", `{"preset":"qwen2.5-14b-1m","ctx":"32k","budget_gib":2.6640625,"formats":["f16","q8_0","q8_0/q4_0","q5_1/q4_0"]}`)
	if r.StatusCode != 200 {
		t.Fatalf("POST /api/plan: %d %s", r.StatusCode, body(t, r))
	}
	decode(t, r, &plan)
	if !strings.Contains(plan.Report.Policy.Reason, "fits budget 2728 MiB") {
		t.Errorf("plan reason %q", plan.Report.Policy.Reason)
	}
	r = do(t, h, http.MethodGet, "/api/plan?ctx=32k&budget_gib=3.25", "")
	decode(t, r, &plan)
	if plan.Report.Policy.Choice != "q8_0/q8_0" {
		t.Errorf("GET /api/plan picks %q", plan.Report.Policy.Choice)
	}

	var models struct {
		Data []any `json:"data"`
	}
	decode(t, do(t, h, http.MethodGet, "/v1/models", ""), &models)
	if models.Data == nil {
		t.Error("/v1/models has no data array")
	}
	var sys map[string]any
	decode(t, do(t, h, http.MethodGet, "/api/system", ""), &sys)
	if sys["cpus"] == nil || sys["memory"] == nil {
		t.Errorf("/api/system: %v", sys)
	}
	r = do(t, h, http.MethodGet, "/metrics", "")
	if b := body(t, r); r.StatusCode != 200 || !strings.Contains(b, "kvlab_queue_depth") || !strings.Contains(b, "kvlab_http_requests_total") {
		t.Errorf("/metrics: %d %.300s", r.StatusCode, b)
	}
}

// TestBadRequests sends malformed and invalid requests: each gets a 4xx JSON error that says
// what is wrong, and the server keeps serving.
func TestBadRequests(t *testing.T) {
	cfg := storiesConfig(t)
	cfg.MaxBodyBytes = 4096
	h := mustNew(t, cfg).Handler()
	big := `{"model":"stories260K","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"invalid JSON", "POST", "/v1/chat/completions", `{"model": "stories260K", "messages": [`, 400, "not valid JSON"},
		{"not an object", "POST", "/v1/chat/completions", `"hello"`, 400, "not a valid"},
		{"empty body", "POST", "/v1/chat/completions", ``, 400, "empty"},
		{"trailing data", "POST", "/v1/completions", `{"model":"stories260K","prompt":"a"} {}`, 400, "after its JSON"},
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, 404, `model "gpt-9" not found`},
		{"negative max_tokens", "POST", "/v1/chat/completions", `{"model":"stories260K","max_tokens":-5,"messages":[{"role":"user","content":"hi"}]}`, 400, "max_tokens -5"},
		{"zero max_tokens", "POST", "/v1/completions", `{"model":"stories260K","max_tokens":0,"prompt":"hi"}`, 400, "max_tokens 0"},
		{"wrong type", "POST", "/v1/chat/completions", `{"model":"stories260K","max_tokens":"many","messages":[]}`, 400, "max_tokens"},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"stories260K","messages":[]}`, 400, "conversation is empty"},
		{"bad role", "POST", "/v1/chat/completions", `{"model":"stories260K","messages":[{"role":"wizard","content":"hi"}]}`, 400, `unknown role "wizard"`},
		{"bad temperature", "POST", "/v1/chat/completions", `{"model":"stories260K","temperature":9,"messages":[{"role":"user","content":"hi"}]}`, 400, "temperature 9"},
		{"n > 1", "POST", "/v1/chat/completions", `{"model":"stories260K","n":3,"messages":[{"role":"user","content":"hi"}]}`, 400, "one choice"},
		{"no prompt", "POST", "/v1/completions", `{"model":"stories260K"}`, 400, "prompt is required"},
		{"oversize body", "POST", "/v1/chat/completions", big, 413, "larger than the limit of 4096 bytes"},
		{"bad plan field", "GET", "/api/plan?ctx=-5", "", 400, "at least 1 token"},
		{"bad A/B arm", "POST", "/api/ab", `{"model":"stories260K","arms":["q9_9"]}`, 400, "arms"},
		{"no A/B arms", "POST", "/api/ab", `{"model":"stories260K","arms":[]}`, 400, "at least one"},
		{"unknown run", "GET", "/api/runs/nope", "", 404, "no such run"},
		{"unknown session", "GET", "/api/sessions/nope", "", 404, "no session"},
		{"unknown route", "GET", "/v1/nope", "", 404, "no such route"},
		{"wrong method", "GET", "/v1/chat/completions", "", 405, "method not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, h, tc.method, tc.path, tc.body)
			if r.StatusCode != tc.status {
				t.Errorf("status %d, want %d", r.StatusCode, tc.status)
			}
			if ct := r.Header.Get("Content-Type"); !strings.Contains(ct, "application/json") {
				t.Errorf("content type %q", ct)
			}
			var e apiErr
			decode(t, r, &e)
			if !strings.Contains(e.Error.Message, tc.want) {
				t.Errorf("message %q lacks %q", e.Error.Message, tc.want)
			}
			if e.Error.Type == "" {
				t.Error("no error type")
			}
		})
	}
	if r := do(t, h, http.MethodGet, "/healthz", ""); r.StatusCode != 200 {
		t.Errorf("the server stopped answering: %d", r.StatusCode)
	}
}

// TestAuth: a non-loopback address needs a key; with a key every route but /healthz, /login
// and the assets needs it, as a bearer token or the login cookie.
func TestAuth(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.168.1.2:80", "[::]:80"} {
		if _, err := New(Config{Addr: addr, Logger: quiet}); err == nil || !strings.Contains(err.Error(), "api-key") {
			t.Errorf("%s without a key: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:80", "[::1]:8080"} {
		if !IsLoopback(addr) {
			t.Errorf("%s is loopback", addr)
		}
	}
	s := mustNew(t, Config{Addr: "0.0.0.0:0", APIKey: "sekrit-sekrit-sekrit"})
	h := s.Handler()
	for _, tc := range []struct {
		name, method, path string
		header             []string
		status             int
	}{
		{"health is public", "GET", "/healthz", nil, 200},
		{"assets are public", "GET", "/assets/kvlab.css", nil, 200},
		{"login is public", "GET", "/login", nil, 200},
		{"no key", "GET", "/v1/models", nil, 401},
		{"wrong key", "GET", "/v1/models", []string{"Authorization", "Bearer nope"}, 401},
		{"right key", "GET", "/v1/models", []string{"Authorization", "Bearer sekrit-sekrit-sekrit"}, 200},
		{"metrics need the key", "GET", "/metrics", nil, 401},
		{"websocket needs the key", "GET", "/ws/chat", nil, 401},
		{"page redirects to login", "GET", "/chat", nil, 302},
		{"cookie works", "GET", "/system", []string{"Cookie", authCookie + "=" + cookieValue("sekrit-sekrit-sekrit")}, 200},
		{"wrong cookie", "GET", "/api/system", []string{"Cookie", authCookie + "=" + cookieValue("other")}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, h, tc.method, tc.path, "", tc.header...)
			if r.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", r.StatusCode, tc.status)
			}
			if tc.status == 401 {
				var e apiErr
				decode(t, r, &e)
				if e.Error.Code != "invalid_api_key" {
					t.Errorf("error %+v", e.Error)
				}
			}
		})
	}
	// The login form sets the cookie for the right key only, and sends the browser back.
	r := do(t, h, http.MethodPost, "/login", "", "Content-Type", "application/x-www-form-urlencoded")
	if r.StatusCode != http.StatusUnauthorized {
		t.Errorf("empty login: %d", r.StatusCode)
	}
	req := "key=sekrit-sekrit-sekrit&next=%2Fsystem"
	r = doForm(t, h, "/login", req)
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/system" {
		t.Fatalf("login: %d to %q", r.StatusCode, r.Header.Get("Location"))
	}
	var cookie string
	for _, c := range r.Cookies() {
		if c.Name == authCookie {
			cookie = c.Value
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				t.Errorf("cookie %+v", c)
			}
		}
	}
	if cookie != cookieValue("sekrit-sekrit-sekrit") || strings.Contains(cookie, "sekrit-sekrit-sekrit") {
		t.Errorf("cookie %q", cookie)
	}
	if r := doForm(t, h, "/login", "key=sekrit-sekrit-sekrit&next=https%3A%2F%2Fevil.example"); r.Header.Get("Location") != "/" {
		t.Errorf("login redirects off-site to %q", r.Header.Get("Location"))
	}
}

func doForm(t *testing.T, h http.Handler, path, form string) *http.Response {
	t.Helper()
	return do(t, h, http.MethodPost, path, form, "Content-Type", "application/x-www-form-urlencoded")
}

// TestLabPagePreset: a /lab link (the planner's) presets the arms and the model.
func TestLabPagePreset(t *testing.T) {
	h := mustNew(t, storiesConfig(t)).Handler()
	b := body(t, do(t, h, http.MethodGet, "/lab?arms=q8_0,q2k%2Bw64&arms=q8_0&n=12", ""))
	for _, want := range []string{`value="q8_0"`, `value="q2k+w64"`, `id="lab-n" min="1" max="4096" value="12"`, `<option value="stories260K" selected`} {
		if !strings.Contains(b, want) {
			t.Errorf("/lab lacks %q", want)
		}
	}
	if strings.Count(b, `class="arm"`) != 2 {
		t.Errorf("want 2 arms (q8_0 once)")
	}
}
