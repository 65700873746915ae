package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/server"
)

// findChromium returns a Chromium or Chrome binary on PATH (KVLAB_CHROMIUM overrides).
func findChromium() string {
	if p := os.Getenv("KVLAB_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser starts headless Chromium for a test, or skips the test when there is none (and fails
// it under CI=true, where .ci/run installs Debian's chromium).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := findChromium()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium on PATH: CI must install it (apt-get install chromium)")
		}
		t.Skip("browser test skipped: no chromium, chromium-browser or google-chrome on PATH (apt-get install chromium, or set KVLAB_CHROMIUM)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// startServer serves kvlab on a loopback port; stop shuts it down and waits.
func startServer(t *testing.T) (base string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv, err := server.New(server.Config{Addr: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- srv.ServeListener(ctx, ln) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("server: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return "http://" + ln.Addr().String(), stop
}

// pageRow is one row of the page's ladder table: the exact numbers of its data-value attributes.
type pageRow struct {
	Format string            `json:"format"`
	Values map[string]string `json:"values"`
	Text   map[string]string `json:"text"`
}

const readLadder = `Array.from(document.querySelectorAll('#ladder tbody tr')).map(tr => ({
  format: tr.dataset.format,
  values: Object.fromEntries(Array.from(tr.querySelectorAll('td')).map(td => [td.dataset.k, td.dataset.value])),
  text: Object.fromEntries(Array.from(tr.querySelectorAll('td')).map(td => [td.dataset.k, td.textContent])),
}))`

// eval runs a script for its effect.
func eval(js string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](js)(ctx, t)
		return chromedp.Void{}, err
	}
}

// setField sets a form control's value as a user would and fires input and change.
func setField(name, value string) chromedp.Action[chromedp.Void] {
	return eval(fmt.Sprintf(`(() => { const el = document.querySelector('[name=%q]'); el.value = %q;
	  el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, name, value))
}

// setFormats checks exactly the given pairs among the format checkboxes.
func setFormats(list string) chromedp.Action[chromedp.Void] {
	return eval(fmt.Sprintf(`(() => { const want = new Set(%q.split(','));
	  for (const cb of document.querySelectorAll('input[name=formats]')) cb.checked = want.has(cb.value);
	  document.getElementById('plan-form').dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, list))
}

// waitRecomputed waits until the calculator has recomputed the results after seq.
func waitRecomputed(ctx context.Context, t *testing.T, after int) int {
	t.Helper()
	cond := fmt.Sprintf(`document.getElementById('results').dataset.source === 'wasm' && Number(document.getElementById('results').dataset.seq) > %d`, after)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the page did not recompute: %v", err)
	}
	return seqNow(ctx, t)
}

func seqNow(ctx context.Context, t *testing.T) int {
	t.Helper()
	seq, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Number(document.getElementById('results').dataset.seq || 0)`))
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// comparePage checks that the page's ladder and policy pick are the CLI's, number for number.
func comparePage(ctx context.Context, t *testing.T, cliArgs ...string) {
	t.Helper()
	out, err := runKvlab(t, append([]string{"plan", "--json"}, cliArgs...)...)
	if err != nil {
		t.Fatalf("kvlab plan %v: %v", cliArgs, err)
	}
	var cli struct {
		Ladder []map[string]any `json:"ladder"`
		Choice string           `json:"choice"`
		Reason string           `json:"reason"`
	}
	if err := json.Unmarshal([]byte(out), &cli); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]pageRow](readLadder))
	if err != nil {
		t.Fatal(err)
	}
	choice := text(ctx, t, "#policy-choice")
	reason := text(ctx, t, "#policy-reason")
	if choice != cli.Choice || reason != cli.Reason {
		t.Errorf("page picks %s %q; CLI %s %q", choice, reason, cli.Choice, cli.Reason)
	}
	if len(rows) != len(cli.Ladder) {
		t.Fatalf("page shows %d rows, CLI %d", len(rows), len(cli.Ladder))
	}
	for i, want := range cli.Ladder {
		got := rows[i]
		if got.Format != want["format"] {
			t.Errorf("row %d: page %s, CLI %v", i, got.Format, want["format"])
		}
		for _, k := range []string{"kib_per_token", "kv_gib", "max_resident_ctx", "sessions", "fits", "total_gib", "decode_tps"} {
			if g, w := got.Values[k], fmt.Sprint(want[k]); !sameNumber(g, w) {
				t.Errorf("%s %s: page %s, CLI %s", got.Format, k, g, w)
			}
		}
	}
}

// evalString evaluates a JavaScript string.
func evalString(ctx context.Context, t *testing.T, js string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return s
}

// text reads the visible text of the element that matches a CSS selector.
func text(ctx context.Context, t *testing.T, css string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("reading %s: %v", css, err)
	}
	return s
}

// sameNumber compares a data-value attribute with a JSON value printed by fmt.
func sameNumber(page, cli string) bool {
	if page == cli {
		return true
	}
	var a, b float64
	_, err1 := fmt.Sscan(page, &a)
	_, err2 := fmt.Sscan(cli, &b)
	return err1 == nil && err2 == nil && a == b
}

// TestPlanPageMatchesCLI drives /plan in headless Chromium: it sets inputs, lets the in-browser
// calculator recompute, and checks the page shows the CLI's numbers; then it drops GGUF files,
// enters bad input, and stops the server to show the page keeps computing offline.
func TestPlanPageMatchesCLI(t *testing.T) {
	ctx := browser(t)
	base, stop := startServer(t)

	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/plan"),
		chromedp.WaitVisible(chromedp.CSS(`#calc-status[data-state="ready"]`)),
	); err != nil {
		t.Fatalf("the page did not load its calculator: %v", err)
	}
	seq := seqNow(ctx, t)

	// Seed 000 §1 at an 8 GiB budget, typed into the form.
	formats := "f16,q8_0,q8_0/q4_0,q5_0,q4_0"
	if err := chromedp.Do(ctx,
		setField("preset", "qwen2.5-14b-1m"),
		setField("ctx", ""),
		chromedp.SendKeys(chromedp.CSS("#f-ctx"), "32768"),
		chromedp.SendKeys(chromedp.CSS("#f-budget_gib"), "8"),
		setFormats(formats),
	); err != nil {
		t.Fatal(err)
	}
	seq = waitRecomputed(ctx, t, seq)
	comparePage(ctx, t, "--preset", "qwen2.5-14b-1m", "--ctx", "32768", "--budget-gib", "8", "--formats", formats)
	if maxText := text(ctx, t, `#ladder tr[data-format="f16"] td[data-k="max_resident_ctx"]`); maxText != "43.7k" {
		t.Errorf("f16 max resident ctx reads %q", maxText)
	}
	if title := evalString(ctx, t, `document.querySelector('#ladder tr[data-format="f16"] td[data-k="max_resident_ctx"]').title`); !strings.HasPrefix(title, "43690 tokens") {
		t.Errorf("f16 max resident ctx's exact figure %q", title)
	}

	// Seed 000 P1: the policy at a 2728 MiB budget.
	if err := chromedp.Do(ctx, setField("budget_gib", "2.6640625")); err != nil {
		t.Fatal(err)
	}
	seq = waitRecomputed(ctx, t, seq)
	comparePage(ctx, t, "--preset", "qwen2.5-14b-1m", "--ctx", "32768", "--budget-gib", "2.6640625", "--formats", formats)

	// Another model, GPU pair and overlay.
	if err := chromedp.Do(ctx, setField("preset", "llama-3.1-70b"), setField("gpu", "h100"), setField("gpus", "2"),
		setField("budget_gib", ""), setField("ctx", "128k"), setField("sessions", "3"), setField("window", "256"), setField("sinks", "8")); err != nil {
		t.Fatal(err)
	}
	seq = waitRecomputed(ctx, t, seq)
	comparePage(ctx, t, "--preset", "llama-3.1-70b", "--gpu", "h100", "--gpus", "2", "--ctx", "128k", "--sessions", "3",
		"--window", "256", "--sinks", "8", "--formats", formats)

	// Bad input: a clear message in place of the results, and recovery.
	if err := chromedp.Do(ctx, setField("ctx", "-5")); err != nil {
		t.Fatal(err)
	}
	seq = waitRecomputed(ctx, t, seq)
	if msg := text(ctx, t, "#plan-error"); !strings.Contains(msg, "ctx") || !strings.Contains(msg, "at least 1 token") {
		t.Errorf("negative context shows %q", msg)
	}
	if err := chromedp.Do(ctx, setField("ctx", "64k")); err != nil {
		t.Fatal(err)
	}
	seq = waitRecomputed(ctx, t, seq)

	// A dropped GGUF file: only its header is read, and the page plans for it as the CLI does.
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny-qwen3.gguf")
	writeFixtureGGUF(t, model)
	if err := chromedp.Do(ctx,
		chromedp.SetUploadFiles(chromedp.CSS("#gguf-file"), []string{model}),
		chromedp.WaitVisible(chromedp.CSS(`#drop-zone[data-state="ok"]`)),
	); err != nil {
		t.Fatalf("dropping a GGUF file: %v", err)
	}
	seq = waitRecomputed(ctx, t, seq)
	comparePage(ctx, t, "--model", model, "--gpu", "h100", "--gpus", "2", "--ctx", "64k", "--sessions", "3",
		"--window", "256", "--sinks", "8", "--formats", formats)

	notGGUF := filepath.Join(dir, "notes.gguf")
	if err := os.WriteFile(notGGUF, []byte("these are notes, not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetUploadFiles(chromedp.CSS("#gguf-file"), []string{notGGUF}),
		chromedp.WaitVisible(chromedp.CSS(`#drop-zone[data-state="error"]`)),
	); err != nil {
		t.Fatal(err)
	}
	if msg := text(ctx, t, "#drop-message"); !strings.Contains(msg, "not a GGUF file") {
		t.Errorf("a non-GGUF drop says %q", msg)
	}

	// Offline: with the server stopped, the page still recomputes.
	stop()
	if err := chromedp.Do(ctx, setField("preset", "qwen3-4b"), setField("ctx", "32768")); err != nil {
		t.Fatal(err)
	}
	waitRecomputed(ctx, t, seq)
	comparePage(ctx, t, "--preset", "qwen3-4b", "--gpu", "h100", "--gpus", "2", "--ctx", "32768", "--sessions", "3",
		"--window", "256", "--sinks", "8", "--formats", formats)
}

// writeFixtureGGUF writes a small Qwen3-shaped GGUF file: the header of a 36-layer model and
// one tensor.
func writeFixtureGGUF(t *testing.T, path string) {
	t.Helper()
	var buf bytes.Buffer
	err := gguf.Write(&buf, []gguf.KV{
		{Key: "general.architecture", Value: "qwen3"}, {Key: "general.name", Value: "Tiny Qwen3"},
		{Key: "qwen3.block_count", Value: uint32(36)}, {Key: "qwen3.attention.head_count", Value: uint32(32)},
		{Key: "qwen3.attention.head_count_kv", Value: uint32(8)}, {Key: "qwen3.attention.key_length", Value: uint32(128)},
		{Key: "qwen3.attention.value_length", Value: uint32(128)}, {Key: "qwen3.context_length", Value: uint32(40960)},
	}, []gguf.WriteTensor{{Name: "token_embd.weight", Dims: []uint64{256, 1024}, Type: gguf.Q8_0}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
