package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kvlab/kvlab/internal/discover"
	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/server"
)

// dashboard serves kvlab with stories260K on a loopback port, its forward passes counted and
// slowed by delay so that a test can press Stop mid-reply.
func dashboard(t *testing.T, delay time.Duration) (base string, passes *atomic.Int64) {
	t.Helper()
	m, err := discover.Inspect(fixtures.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	m.Name = "stories260K"
	passes = new(atomic.Int64)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Addr: ln.Addr().String(), Models: []discover.Model{m}, Threads: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ForwardHook: func(f server.ForwardFunc) server.ForwardFunc {
			return func(tokens []int32, c *kvcache.Cache, logits []float32) error {
				passes.Add(1)
				time.Sleep(delay)
				return f(tokens, c, logits)
			}
		}})
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
	return "http://" + ln.Addr().String(), passes
}

// poll waits for a JavaScript condition.
func poll(ctx context.Context, t *testing.T, what, cond string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// evalInt evaluates a JavaScript number.
func evalInt(ctx context.Context, t *testing.T, js string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return n
}

// screenshot saves the page to $KVLAB_SCREENSHOTS/name.png when that is set.
func screenshot(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv("KVLAB_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

const replyText = `(document.querySelector('#messages .msg.assistant:last-child .text') || {textContent: ''}).textContent`

// TestChatPageStreamsAndStops drives /chat in headless Chromium: it sends a message, sees the
// reply stream in with live stats, presses Stop and sees the generation end — on the server too:
// the forward passes stop — then reloads the page and finds the conversation still there.
func TestChatPageStreamsAndStops(t *testing.T) {
	ctx := browser(t)
	base, passes := dashboard(t, 15*time.Millisecond)
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(base+"/chat"),
		chromedp.WaitVisible(chromedp.CSS(`#conn-state[data-state="open"]`)),
		chromedp.SetValue(chromedp.ID("max-tokens"), "1500"),
		chromedp.SendKeys(chromedp.ID("prompt"), "Once upon a time"),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "tokens to stream", replyText+`.length > 40 && document.getElementById('gen-state').dataset.state === 'generating'`)
	poll(ctx, t, "live stats", `Number(document.getElementById('ntok').textContent) > 5 && document.getElementById('kv-format').textContent === 'f16/f16' && /\d/.test(document.getElementById('tps').textContent) && document.getElementById('ctx-meter').value > 0`)
	first := evalInt(ctx, t, replyText+`.length`)
	poll(ctx, t, "more tokens", replyText+`.length > `+strconv.Itoa(first))
	screenshot(ctx, t, "chat")

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("stop"))); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the reply to stop", `document.getElementById('gen-state').dataset.state === 'stopped'`)
	at := passes.Load()
	stopped := evalInt(ctx, t, replyText+`.length`)
	time.Sleep(300 * time.Millisecond)
	if n := passes.Load(); n > at+1 {
		t.Errorf("%d forward passes after the reply stopped: the server kept generating", n-at)
	}
	if n := evalInt(ctx, t, replyText+`.length`); n != stopped {
		t.Errorf("the reply grew from %d to %d characters after it stopped", stopped, n)
	}
	if ntok := evalInt(ctx, t, `Number(document.getElementById('ntok').textContent)`); ntok >= 1500 || ntok < 5 {
		t.Errorf("stopped after %d tokens", ntok)
	}

	// The conversation survives a reload.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#conn-state[data-state="open"]`))); err != nil {
		t.Fatal(err)
	}
	if n := evalInt(ctx, t, `document.querySelectorAll('#messages .msg').length`); n != 2 {
		t.Errorf("after a reload the page shows %d messages, want 2", n)
	}
	if n := evalInt(ctx, t, replyText+`.length`); n != stopped {
		t.Errorf("after a reload the reply has %d characters, had %d", n, stopped)
	}
}

// TestLabPageRunsAB drives /lab: an A/B of two arms (f16 and q4_0) on stories260K streams both
// columns position by position; the run is saved and appears on /runs.
func TestLabPageRunsAB(t *testing.T) {
	ctx := browser(t)
	base, _ := dashboard(t, 0)
	const n = 32
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(base+"/lab?arms=f16,q4_0"),
		chromedp.WaitVisible(chromedp.CSS(`#lab-conn[data-state="open"]`)),
		chromedp.SetValue(chromedp.ID("lab-n"), strconv.Itoa(n)),
		chromedp.Click(chromedp.ID("lab-start")),
	); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the run to finish", `document.getElementById('lab-state').dataset.state === 'done'`)
	cols := `Array.from(document.querySelectorAll('#columns .column'))`
	if got := evalInt(ctx, t, cols+`.length`); got != 3 {
		t.Fatalf("%d columns, want the reference and two arms", got)
	}
	poll(ctx, t, "every column to fill", cols+`.every(c => Number(c.dataset.tokens) === `+strconv.Itoa(n)+` && c.querySelector('pre').textContent.length > 20)`)
	if got := evalInt(ctx, t, `document.querySelectorAll('#live-kl polyline').length`); got != 2 {
		t.Errorf("the KL chart has %d lines", got)
	}
	if txt, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#arm-stats tr[data-arm="f16"] td[data-k="mean"]`))); err != nil || txt != "0.000" {
		t.Errorf("the f16 arm's mean KL reads %q (%v), want 0", txt, err)
	}
	screenshot(ctx, t, "lab")
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('run-link').getAttribute('href').split('/').pop()`))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/runs"),
		chromedp.WaitVisible(chromedp.CSS(`#runs-table tr[data-run="`+id+`"][data-arm="q4_0"]`))); err != nil {
		t.Fatalf("run %s is not on /runs: %v", id, err)
	}
	screenshot(ctx, t, "runs")
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/runs/"+id), chromedp.WaitVisible(chromedp.CSS(`#kl-chart`))); err != nil {
		t.Fatal(err)
	}
	screenshot(ctx, t, "run")
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/system"), chromedp.WaitVisible(chromedp.CSS(`#models-table`))); err != nil {
		t.Fatal(err)
	}
	screenshot(ctx, t, "system")
}
