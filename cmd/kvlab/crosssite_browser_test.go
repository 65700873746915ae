package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// attackPage is a page of another origin that tries every way a browser lets a page reach the
// local server: an HTML form posting text/plain JSON (no preflight), "simple" no-cors fetches,
// a JSON fetch (preflighted, never granted), and both websockets. BASE is the server.
const attackPage = `<!doctype html><html><body>
<iframe name="sink"></iframe>
<form id="f" method="POST" action="BASE/api/ab" enctype="text/plain" target="sink">
<input name='{"model":"stories260K","prompt":"Once","n":4,"arms":["q8_0"],"x":"' value='"}'>
</form>
<script>
window.results = {};
const ab = JSON.stringify({model: "stories260K", prompt: "Once", n: 4, arms: ["q8_0"]});
const chat = JSON.stringify({model: "stories260K", max_tokens: 8, messages: [{role: "user", content: "Once"}]});
document.getElementById("f").submit();
const note = (k) => (v) => { window.results[k] = String(v && v.type || v); };
fetch("BASE/api/ab", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: ab}).then(note("ab_nocors"), note("ab_nocors"));
fetch("BASE/v1/chat/completions", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: chat}).then(note("chat_nocors"), note("chat_nocors"));
fetch("BASE/api/ab", {method: "POST", headers: {"Content-Type": "application/json"}, body: ab}).then(note("ab_json"), note("ab_json"));
fetch("BASE/v1/chat/completions", {method: "POST", headers: {"Content-Type": "application/json"}, body: chat}).then(note("chat_json"), note("chat_json"));
for (const [path, msg] of [["/ws/lab", {type: "start", model: "stories260K", prompt: "Once", n: 4, arms: ["q8_0"]}],
                           ["/ws/chat", {type: "chat", model: "stories260K", max_tokens: 8, messages: [{role: "user", content: "Once"}]}]]) {
  const ws = new WebSocket("BASE".replace("http", "ws") + path);
  ws.onopen = () => { window.results[path] = "open"; ws.send(JSON.stringify(msg)); };
  ws.onmessage = (ev) => { window.results[path + " message"] = ev.data; };
  ws.onclose = (ev) => { window.results[path + " closed"] = String(ev.code); };
}
window.done = true;
</script></body></html>`

// TestCrossSiteBrowser: a page served on another port, in headless Chromium, cannot start an
// A/B or a chat on the server by any of those means: no forward pass runs and no run is
// stored, and the server saw (and refused) the requests.
func TestCrossSiteBrowser(t *testing.T) {
	ctx := browser(t)
	base, passes := dashboard(t, 0)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, strings.ReplaceAll(attackPage, "BASE", base))
	}))
	defer evil.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL+"/")); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the attack to run", `window.done === true && Object.keys(window.results).length >= 6`)
	time.Sleep(2 * time.Second) // let anything that got through start
	res, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`window.results`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("what the page saw: %v", res)
	if n := passes.Load(); n != 0 {
		t.Errorf("%d forward passes ran for a cross-site page", n)
	}
	if _, opened := res["/ws/lab message"]; opened {
		t.Errorf("the lab socket answered a cross-site page: %v", res)
	}
	if _, opened := res["/ws/chat message"]; opened {
		t.Errorf("the chat socket answered a cross-site page: %v", res)
	}
	r, err := http.Get(base + "/api/runs")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(b), `"runs":[]`) {
		t.Errorf("runs were stored: %.300s", b)
	}
	// The requests reached the server and were refused there (not merely by the browser).
	r, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(r.Body)
	r.Body.Close()
	refused := regexp.MustCompile(`kvlab_http_requests_total\{code="(403|415)",route="([^"]+)"\} (\d+)`).FindAllStringSubmatch(string(b), -1)
	routes := map[string]bool{}
	for _, m := range refused {
		routes[m[2]] = true
	}
	for _, want := range []string{"/api/ab", "/v1/chat/completions", "/ws/lab", "/ws/chat"} {
		if !routes[want] {
			t.Errorf("no refused request on %s in the metrics: %v", want, refused)
		}
	}
}
