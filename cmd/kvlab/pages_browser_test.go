package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/kvlab/kvlab/internal/discover"
	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/server"
)

// serveWith serves kvlab with stories260K and the run history in db on a loopback port.
func serveWith(t *testing.T, db string) string {
	t.Helper()
	m, err := discover.Inspect(fixtures.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	m.Name = "stories260K"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Addr: ln.Addr().String(), Models: []discover.Model{m}, Threads: 1, HistoryPath: db,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeListener(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func evalBool(ctx context.Context, t *testing.T, js string) bool {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return b
}

// sourceJargon are words of the project's sources that no page may show a user.
var sourceJargon = []string{"seed 0", "Seed 0", "HAL #", "#620", "#582", "#584", "§"}

// noJargon checks that the page's text names mechanisms, not the project's sources.
func noJargon(ctx context.Context, t *testing.T, page string) {
	t.Helper()
	body := evalString(ctx, t, `document.documentElement.outerHTML`)
	for _, j := range sourceJargon {
		if strings.Contains(body, j) {
			i := strings.Index(body, j)
			t.Errorf("%s contains %q: …%s…", page, j, body[max(0, i-80):min(len(body), i+80)])
		}
	}
}

// TestCLIRunPage: a run made by `kvlab ab` shows its prompt, what was fed after it and each
// cache's own tokens on /runs/ID, its KL chart labelled in nats on a linear scale, its needle
// column "not run" and its attention error as a percentage.
func TestCLIRunPage(t *testing.T) {
	ctx := browser(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	out, err := runKvlab(t, "ab", "--model", fixtures.Path(t, "stories260K.gguf"), "--arms", "q8_0,q4_0", "--n", "16", "--no-needle", "--db", db)
	if err != nil {
		t.Fatalf("kvlab ab: %v\n%s", err, out)
	}
	base := serveWith(t, db)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/runs/1"), chromedp.WaitVisible(chromedp.CSS(`#kl-chart`))); err != nil {
		t.Fatal(err)
	}
	screenshot(ctx, t, "cli-run")
	pres := `Array.from(document.querySelectorAll('#run pre.text')).map(p => p.textContent.trim().length)`
	if n := evalInt(ctx, t, pres+`.length`); n != 5 {
		t.Fatalf("%d text boxes, want the prompt, the fed text and three columns", n)
	}
	if !evalBool(ctx, t, pres+`.every(n => n > 10)`) {
		t.Errorf("an empty text box on the CLI run's page: lengths %s", evalString(ctx, t, `JSON.stringify(`+pres+`)`))
	}
	if got := evalString(ctx, t, `document.querySelector('#run .hint').textContent`); !strings.Contains(got, "16 of 16 positions") {
		t.Errorf("the run's token counts: %q", got)
	}
	if got := evalString(ctx, t, `document.getElementById('kl-chart').textContent`); !strings.Contains(got, "KL (nats)") || strings.Contains(got, "e-") {
		t.Errorf("the KL chart's text %q: want the axis in nats and plain ticks", got)
	}
	cells := evalString(ctx, t, `Array.from(document.querySelectorAll('#run table tbody tr:first-child td')).map(td => td.textContent).join('|')`)
	if !strings.Contains(cells, "not run") || !strings.Contains(cells, " %") {
		t.Errorf("the first arm's row %q: want needle \"not run\" and the attention error in %%", cells)
	}
	heads := evalString(ctx, t, `Array.from(document.querySelectorAll('#run table thead th')).map(th => th.textContent).join('|')`)
	seen := map[string]bool{}
	for _, h := range strings.Split(heads, "|") {
		if seen[h] {
			t.Errorf("two columns headed %q: %s", h, heads)
		}
		seen[h] = true
	}
	noJargon(ctx, t, "/runs/1")

	// /runs draws the run's arms on the quality-against-size chart.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(chromedp.CSS(`#pareto-chart`))); err != nil {
		t.Fatal(err)
	}
	if n := evalInt(ctx, t, `document.querySelectorAll('#pareto-chart circle').length`); n != 2 {
		t.Errorf("the chart on /runs has %d points, want q8_0's and q4_0's", n)
	}

	// /plan shows the quality measured next to the capacity: q8_0 and q4_0 from this run, the
	// other formats not measured yet, each linked.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/plan"), chromedp.WaitVisible(chromedp.CSS(`#quality-table`))); err != nil {
		t.Fatal(err)
	}
	cell := func(format string) string {
		return evalString(ctx, t, `(document.querySelector('#quality-table tr[data-format="`+format+`"] td') || {textContent: 'none'}).textContent`)
	}
	// The figures are the run's (q8_0 may miss a near-tied token of the 16): the cell shows both.
	if got := cell("q8_0"); !strings.HasPrefix(got, "KL ") || !strings.Contains(got, "top-1 ") || !strings.HasSuffix(got, " %") {
		t.Errorf("q8_0's measured quality reads %q", got)
	}
	if got := evalString(ctx, t, `document.querySelector('#quality-table tr[data-format="q8_0"] td a').getAttribute('href')`); got != "/runs/1" {
		t.Errorf("q8_0's measurement links to %q", got)
	}
	if got := cell("q5_1/q4_0"); got != "not measured yet — measure in the lab" {
		t.Errorf("q5_1/q4_0 reads %q", got)
	}
	screenshot(ctx, t, "plan-quality")
}

// TestPlanPageLeadsWithTheAnswer: at 1280 px /plan shows every ladder column, leads with the
// answer (the pick, the context, the sessions) and a memory bar per format, shows the launch
// commands behind a button, keeps the calibration example closed, and names no sources.
func TestPlanPageLeadsWithTheAnswer(t *testing.T) {
	ctx := browser(t)
	base, _ := startServer(t)
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(base+"/plan?preset=qwen2.5-14b-1m&gpu=rtx-3090&ctx=131072&formats=f16&formats=q8_0&formats=q8_0/q4_0&formats=q5_1/q4_0&formats=q4_0&formats=tq4"),
		chromedp.WaitVisible(chromedp.CSS(`#calc-status[data-state="ready"]`)),
	); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the calculator's view", `document.getElementById('results').dataset.source === 'wasm'`)
	screenshot(ctx, t, "plan-1280")
	if first := evalString(ctx, t, `document.getElementById('results').firstElementChild.id`); first != "policy" {
		t.Errorf("the results start with #%s, not the answer", first)
	}
	if got := evalString(ctx, t, `document.getElementById('answer').textContent`); !strings.Contains(got, "131k tokens") || !strings.Contains(got, "1 session") {
		t.Errorf("the answer %q does not say the context and the sessions", got)
	}
	if n := evalInt(ctx, t, `document.querySelectorAll('#memory-chart .mem-bar').length`); n != 6 {
		t.Errorf("%d memory bars, want one per format", n)
	}
	// Every column of the ladder is inside the viewport, the page does not scroll sideways.
	right := evalInt(ctx, t, `Math.ceil(Math.max(...Array.from(document.querySelectorAll('#ladder th, #ladder td')).map(c => c.getBoundingClientRect().right)))`)
	if right > 1280 {
		t.Errorf("the ladder reaches %d px, past the 1280 px viewport", right)
	}
	if !evalBool(ctx, t, `document.getElementById('results').scrollWidth <= document.getElementById('results').clientWidth + 1`) {
		t.Error("the results scroll sideways at 1280 px")
	}
	if got := evalInt(ctx, t, `document.querySelectorAll('#ladder thead th').length`); got != 9 {
		t.Errorf("%d ladder columns, want 9 (no overlay column without an overlay)", got)
	}
	// The launch commands: hidden, then shown by the button.
	if !evalBool(ctx, t, `document.getElementById('launch').hidden`) {
		t.Error("the launch commands show before they are asked for")
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("launch-toggle"))); err != nil {
		t.Fatal(err)
	}
	if !evalBool(ctx, t, `!document.getElementById('launch').hidden`) {
		t.Error("the button did not show the launch commands")
	}
	vllm := evalString(ctx, t, `document.querySelector('#launch-vllm pre').textContent`)
	if !strings.HasPrefix(vllm, "vllm serve ") || !strings.Contains(vllm, "--max-model-len 131072") || !strings.Contains(vllm, "--kv-cache-dtype fp8") {
		t.Errorf("vllm line %q", vllm)
	}
	pick := strings.Split(evalString(ctx, t, `document.getElementById('policy-choice').textContent`)+"/", "/")
	if got := evalString(ctx, t, `document.querySelector('#launch-llamacpp pre').textContent`); !strings.Contains(got, "-ctk "+pick[0]+" -ctv "+pick[1]) || !strings.Contains(got, "-c 131072") {
		t.Errorf("llama.cpp line %q for the pick %v", got, pick)
	}
	screenshot(ctx, t, "plan-launch")
	// The commands stay open across a recompute.
	seq := seqNow(ctx, t)
	if err := chromedp.Do(ctx, setField("sessions", "2")); err != nil {
		t.Fatal(err)
	}
	waitRecomputed(ctx, t, seq)
	if !evalBool(ctx, t, `!document.getElementById('launch').hidden`) {
		t.Error("the launch commands closed on a recompute")
	}
	if evalBool(ctx, t, `document.getElementById('calibration').open`) {
		t.Error("the calibration example is open before it is asked for")
	}
	noJargon(ctx, t, "/plan")
	// A model trained on a short context: the answer says so.
	seq = seqNow(ctx, t)
	if err := chromedp.Do(ctx, setField("preset", "qwen3-4b"), setField("sessions", "1")); err != nil {
		t.Fatal(err)
	}
	waitRecomputed(ctx, t, seq)
	if got := evalString(ctx, t, `(document.getElementById('answer-trained') || {textContent: ''}).textContent`); !strings.Contains(got, "trained on 32768") {
		t.Errorf("no trained-context warning for 131072 tokens of Qwen3-4B: %q", got)
	}
}

// TestPagesBasics: the favicon is served, /system labels its memory bar, a fresh /chat asks
// nothing of /api/sessions, the context meter reads a fraction (green below 70 %), and no page
// names the project's sources.
func TestPagesBasics(t *testing.T) {
	ctx := browser(t)
	base, _ := dashboard(t, 0)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/chat"),
		chromedp.WaitVisible(chromedp.CSS(`#conn-state[data-state="open"]`))); err != nil {
		t.Fatal(err)
	}
	if n := evalInt(ctx, t, `performance.getEntriesByType('resource').filter(e => e.name.includes('/api/sessions/')).length`); n != 0 {
		t.Errorf("a fresh /chat asked /api/sessions/ %d times", n)
	}
	if got := evalInt(ctx, t, `(() => { const x = new XMLHttpRequest(); x.open('GET', '/favicon.ico', false); x.send(); return x.status; })()`); got != 200 {
		t.Errorf("/favicon.ico: %d", got)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("max-tokens"), "40"),
		chromedp.SendKeys(chromedp.ID("prompt"), "Once upon a time"),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the reply", `document.getElementById('conn-state').dataset.state === 'open' && Number(document.getElementById('ctx-meter').dataset.used || 0) > 20`)
	meter := `document.getElementById('ctx-meter')`
	if !evalBool(ctx, t, meter+`.max === 1 && `+meter+`.value > 0 && `+meter+`.value < `+meter+`.low`) {
		t.Errorf("the context meter: value %s of max %s, low %s: a few tokens of 2048 must read green",
			evalString(ctx, t, `String(`+meter+`.value)`), evalString(ctx, t, `String(`+meter+`.max)`), evalString(ctx, t, `String(`+meter+`.low)`))
	}
	noJargon(ctx, t, "/chat")
	for _, page := range []string{"/lab", "/runs", "/system"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS(`main`))); err != nil {
			t.Fatal(err)
		}
		noJargon(ctx, t, page)
	}
	if got := evalString(ctx, t, `(document.querySelector('label[for="sys-mem-meter"]') || {textContent: ''}).textContent`); !strings.Contains(got, "memory in use") {
		t.Errorf("/system's memory bar has no label: %q", got)
	}
	screenshot(ctx, t, "system")
}

// TestChatMarkdownRegenerateSystem: a reply's markdown is drawn through the vendored marked and
// sanitized by DOMPurify (no script or event handler gets through); Regenerate replaces the
// last reply; the system prompt goes before the conversation.
func TestChatMarkdownRegenerateSystem(t *testing.T) {
	ctx := browser(t)
	base, _ := dashboard(t, 0)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/chat"),
		chromedp.WaitVisible(chromedp.CSS(`#conn-state[data-state="open"]`))); err != nil {
		t.Fatal(err)
	}
	// A stored conversation whose reply holds markdown and hostile HTML.
	if err := chromedp.Do(ctx, eval(`(() => { const s = JSON.parse(localStorage.getItem('kvlab.chat.session'));
	  localStorage.setItem('kvlab.chat.' + s, JSON.stringify({model: 'stories260K', messages: [
	    {role: 'user', content: 'Once upon a time'},
	    {role: 'assistant', content: 'A **bold** cat and \u0060code\u0060.\n\n<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>', note: 'x'}]}));
	  return true; })()`), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#conn-state[data-state="open"]`))); err != nil {
		t.Fatal(err)
	}
	reply := `document.querySelector('#messages .msg.assistant .text')`
	if !evalBool(ctx, t, reply+`.querySelector('strong') !== null && `+reply+`.querySelector('code') !== null`) {
		t.Errorf("the reply's markdown is not drawn: %s", evalString(ctx, t, reply+`.innerHTML`))
	}
	if evalBool(ctx, t, `!!window.pwned || document.querySelector('#messages script, #messages [onerror], #messages .text img') !== null`) {
		t.Errorf("hostile HTML got through: %s", evalString(ctx, t, reply+`.innerHTML`))
	}
	screenshot(ctx, t, "chat-markdown")
	// Regenerate: the reply is replaced by a new one, the conversation keeps two messages.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("system-prompt"), "Tell a story."),
		chromedp.SetValue(chromedp.ID("max-tokens"), "12"),
		chromedp.Click(chromedp.ID("regenerate")),
	); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the new reply", `document.getElementById('gen-state').dataset.state === 'done'`)
	if n := evalInt(ctx, t, `document.querySelectorAll('#messages .msg').length`); n != 2 {
		t.Errorf("%d messages after Regenerate, want 2", n)
	}
	if got := evalString(ctx, t, reply+`.dataset.raw`); strings.Contains(got, "bold") || got == "" {
		t.Errorf("the regenerated reply %q", got)
	}
	// The server kept the conversation with the system prompt first.
	got := evalString(ctx, t, `(() => { const x = new XMLHttpRequest(); x.open('GET', '/api/sessions/' + JSON.parse(localStorage.getItem('kvlab.chat.session')), false); x.send(); return x.responseText; })()`)
	if !strings.Contains(got, `"role":"system","content":"Tell a story."`) {
		t.Errorf("the session %s lacks the system prompt", got)
	}
}

// TestChatConversationList: New chat keeps the conversation left in the list, and a click on
// it brings it back.
func TestChatConversationList(t *testing.T) {
	ctx := browser(t)
	base, _ := dashboard(t, 0)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/chat"),
		chromedp.WaitVisible(chromedp.CSS(`#conn-state[data-state="open"]`)),
		chromedp.SetValue(chromedp.ID("max-tokens"), "8"),
		chromedp.SendKeys(chromedp.ID("prompt"), "Once upon a time"),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the reply", `document.getElementById('gen-state').dataset.state === 'done'`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("new-chat"))); err != nil {
		t.Fatal(err)
	}
	if n := evalInt(ctx, t, `document.querySelectorAll('#messages .msg').length`); n != 0 {
		t.Fatalf("a new chat shows %d messages", n)
	}
	old := `Array.from(document.querySelectorAll('#conv-list button.conv')).find(b => b.textContent.startsWith('Once upon a time'))`
	if !evalBool(ctx, t, `!!`+old) {
		t.Fatalf("the list %q lacks the first conversation", evalString(ctx, t, `document.getElementById('conv-list').textContent`))
	}
	if err := chromedp.Do(ctx, eval(old+`.click() || true`)); err != nil {
		t.Fatal(err)
	}
	if n := evalInt(ctx, t, `document.querySelectorAll('#messages .msg').length`); n != 2 {
		t.Errorf("back in the first conversation: %d messages, want 2", n)
	}
}
