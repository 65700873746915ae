package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestLoadBoundary is the bounded loopback load test of docs/security.md: 64 concurrent
// clients, half streaming /v1/chat/completions and half chatting over /ws/chat, for two
// minutes (KVLAB_LOAD_DURATION overrides) on stories260K with the default 4 slots and a queue
// of 16, so that about a third of the requests find the server full.
// The only errors allowed are clean 503 busy answers; afterwards no generation holds a slot and
// no goroutine is left. It runs only with KVLAB_LOAD=1 (it takes minutes and every core).
func TestLoadBoundary(t *testing.T) {
	if os.Getenv("KVLAB_LOAD") != "1" {
		t.Skip("load test: set KVLAB_LOAD=1 to run it")
	}
	dur := 2 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("KVLAB_LOAD_DURATION")); err == nil {
		dur = d
	}
	const clients, maxTokens = 64, 24
	cfg := storiesConfig(t)
	cfg.Threads = 0
	cfg.MaxQueue = 16
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	goBefore := runtime.NumGoroutine()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapBefore := ms.HeapInuse

	var done, busy, tokens atomic.Int64
	var errMu sync.Mutex
	var errs []string
	fail := func(format string, a ...any) {
		errMu.Lock()
		defer errMu.Unlock()
		if len(errs) < 20 {
			errs = append(errs, fmt.Sprintf(format, a...))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	sse := func(i int) {
		body := fmt.Sprintf(`{"model":"stories260K","stream":true,"max_tokens":%d,"messages":[{"role":"user","content":"Once upon a time %d"}]}`, maxTokens, i)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		r, err := client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				fail("sse: %v", err)
			}
			return
		}
		defer r.Body.Close()
		if r.StatusCode == http.StatusServiceUnavailable {
			var e apiErr
			if json.NewDecoder(r.Body).Decode(&e) != nil || e.Error.Code != "busy" {
				fail("503 without a busy error: %+v", e)
			}
			busy.Add(1)
			time.Sleep(50 * time.Millisecond)
			return
		}
		if r.StatusCode != 200 {
			fail("sse: status %d", r.StatusCode)
			return
		}
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			line := sc.Text()
			if line == "data: [DONE]" {
				done.Add(1)
				return
			}
			if strings.HasPrefix(line, "data: ") {
				if strings.Contains(line, `"error"`) {
					fail("sse error: %s", line)
					return
				}
				tokens.Add(1)
			}
		}
		if ctx.Err() == nil {
			fail("sse: stream ended without [DONE]: %v", sc.Err())
		}
	}
	ws := func(i int) {
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/ws/chat", &websocket.DialOptions{HTTPClient: client})
		if err != nil {
			if ctx.Err() == nil {
				fail("ws dial: %v", err)
			}
			return
		}
		defer c.CloseNow()
		for ctx.Err() == nil {
			msg, _ := json.Marshal(map[string]any{"type": "chat", "model": storiesName, "max_tokens": maxTokens,
				"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("The little dog %d", i)}}})
			if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
				return
			}
		turn:
			for {
				_, b, err := c.Read(ctx)
				if err != nil {
					if ctx.Err() == nil {
						fail("ws read: %v", err)
					}
					return
				}
				var m serverMessage
				if err := json.Unmarshal(b, &m); err != nil {
					fail("ws: %v", err)
					return
				}
				switch m.Type {
				case "token":
					tokens.Add(1)
				case "done":
					done.Add(1)
					break turn
				case "error":
					if m.Code == "busy" {
						busy.Add(1)
						time.Sleep(50 * time.Millisecond)
						break turn
					}
					fail("ws error: %s (%s)", m.Error, m.Code)
					return
				}
			}
		}
		c.Close(websocket.StatusNormalClosure, "")
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 1 {
				ws(i)
				return
			}
			for ctx.Err() == nil {
				sse(i)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	tr.CloseIdleConnections()
	deadline := time.Now().Add(15 * time.Second)
	for (s.gate.running() > 0 || runtime.NumGoroutine() > goBefore+8) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("%d clients for %v: %d streams completed (%.1f/s), %d tokens, %d clean 503 busy, %d other errors; goroutines %d before, %d after; heap in use %.1f MiB before, %.1f MiB after",
		clients, wall.Round(time.Second), done.Load(), float64(done.Load())/wall.Seconds(), tokens.Load(), busy.Load(), len(errs),
		goBefore, runtime.NumGoroutine(), float64(heapBefore)/(1<<20), float64(ms.HeapInuse)/(1<<20))
	for _, e := range errs {
		t.Error(e)
	}
	if s.gate.running() > 0 {
		t.Errorf("%d generations still hold a slot", s.gate.running())
	}
	if g := runtime.NumGoroutine(); g > goBefore+8 {
		t.Errorf("%d goroutines after the load, %d before", g, goBefore)
	}
	if done.Load() == 0 {
		t.Error("no stream completed")
	}
	if r, err := client.Get(ts.URL + "/healthz"); err != nil || r.StatusCode != 200 {
		t.Errorf("healthz after the load: %v", err)
	} else {
		r.Body.Close()
	}
}
