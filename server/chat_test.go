package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// chatTurnMsgs reads messages until "done" or "error", returning them all.
func chatTurnMsgs(t *testing.T, ctx context.Context, c *websocket.Conn) []map[string]any {
	t.Helper()
	var out []map[string]any
	for {
		m := wsRecv(t, ctx, c)
		out = append(out, m)
		if m["type"] == "done" || m["type"] == "error" {
			return out
		}
	}
}

func userTurn(text string, maxTokens int) map[string]any {
	return map[string]any{"type": "chat", "session": "t1", "model": storiesName, "temperature": 0, "max_tokens": maxTokens,
		"messages": []map[string]string{{"role": "user", "content": text}}}
}

// TestChatSocket streams a reply over /ws/chat: start, prefill progress, tokens in order, done;
// the second turn of the conversation reuses the cached prefix, and the session is kept.
func TestChatSocket(t *testing.T) {
	s := mustNew(t, storiesConfig(t))
	ts := testServer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, ctx, ts, "/ws/chat", nil)

	wsSend(t, ctx, c, userTurn("Once upon a time", 20))
	msgs := chatTurnMsgs(t, ctx, c)
	if msgs[0]["type"] != "start" || msgs[0]["kv_format"] != "f16/f16" || msgs[0]["ctx"].(float64) != 2048 {
		t.Fatalf("first message %v", msgs[0])
	}
	var text strings.Builder
	kinds := map[string]int{}
	n := 0.0
	for _, m := range msgs {
		kinds[m["type"].(string)]++
		if m["type"] == "token" {
			if m["n"].(float64) != n+1 {
				t.Fatalf("token %v out of order after %g", m["n"], n)
			}
			n = m["n"].(float64)
			s, _ := m["text"].(string)
			text.WriteString(s)
		}
	}
	last := msgs[len(msgs)-1]
	if last["type"] != "done" || kinds["token"] != 20 || kinds["prefill"] < 1 {
		t.Fatalf("messages %v, last %v", kinds, last)
	}
	res := last["result"].(map[string]any)
	if res["text"] != text.String() || res["stop"] != "length" || res["tokens"].(float64) != 20 {
		t.Errorf("result %v; streamed %q", res, text.String())
	}
	if !strings.HasPrefix(storiesGreedy, ","+strings.TrimPrefix(text.String(), ",")) {
		t.Errorf("reply %q", text.String())
	}

	// A conversation's next turn starts with the tokens of the one before: the cache holds
	// them, and only the new ones are prefilled.
	conv := []map[string]string{{"role": "user", "content": "Once upon a time"}, {"role": "assistant", "content": text.String()}, {"role": "user", "content": "And then?"}}
	turn := userTurn("", 5)
	turn["messages"] = conv
	wsSend(t, ctx, c, turn)
	msgs = chatTurnMsgs(t, ctx, c)
	if msgs[len(msgs)-1]["type"] != "done" {
		t.Fatalf("second turn: %v", msgs[len(msgs)-1])
	}
	res = msgs[len(msgs)-1]["result"].(map[string]any)
	// The whole first turn (its prompt and the 20 tokens of its reply, less the last, never fed)
	// is cached: at least 90 % of it.
	firstTurn := 20.0 + 5 // "Once upon a time" is BOS + 4 tokens
	if cached := res["cached_tokens"].(float64); cached < 0.9*firstTurn {
		t.Errorf("second turn reused %v tokens of the first turn's %v", cached, firstTurn)
	}
	conv = append(conv, map[string]string{"role": "assistant", "content": res["text"].(string)}, map[string]string{"role": "user", "content": "Why?"})
	turn["messages"] = conv
	wsSend(t, ctx, c, turn)
	msgs = chatTurnMsgs(t, ctx, c)
	res = msgs[len(msgs)-1]["result"].(map[string]any)
	if cached, total := res["cached_tokens"].(float64), res["prompt_tokens"].(float64); cached < total/2 {
		t.Errorf("third turn reused %v of %v prompt tokens", cached, total)
	}

	// The session is kept with the reply.
	r := do(t, s.Handler(), http.MethodGet, "/api/sessions/t1", "")
	var sess session
	decode(t, r, &sess)
	if len(sess.Messages) != 6 || sess.Messages[5].Role != "assistant" {
		t.Errorf("session %+v", sess)
	}

	// Bad messages get an error and the socket stays open.
	for _, bad := range []string{`{"type":"chat"`, `{"type":"dance"}`, `{"type":"chat","messages":[]}`, `{"type":"chat","max_tokens":-1,"messages":[{"role":"user","content":"x"}]}`,
		`{"type":"chat","model":"nope","messages":[{"role":"user","content":"x"}]}`} {
		if err := c.Write(ctx, websocket.MessageText, []byte(bad)); err != nil {
			t.Fatal(err)
		}
		if m := wsRecv(t, ctx, c); m["type"] != "error" || m["error"] == "" {
			t.Errorf("%s: %v", bad, m)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// TestChatStop: Stop cancels the generation on the server within a token: the forward passes
// stop growing, the reply ends as "cancelled", and the socket serves the next turn.
func TestChatStop(t *testing.T) {
	fc := &forwardCounter{delay: 10 * time.Millisecond}
	cfg := storiesConfig(t)
	cfg.ForwardHook = fc.wrap
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, ctx, ts, "/ws/chat", nil)
	wsSend(t, ctx, c, userTurn("Once upon a time", 1500))
	tokens := 0
	for tokens < 5 {
		if m := wsRecv(t, ctx, c); m["type"] == "token" {
			tokens++
		}
	}
	wsSend(t, ctx, c, map[string]string{"type": "stop"})
	stoppedAt := fc.n.Load()
	msgs := chatTurnMsgs(t, ctx, c)
	res := msgs[len(msgs)-1]["result"].(map[string]any)
	if res["stop"] != "cancelled" {
		t.Fatalf("after stop: %v", msgs[len(msgs)-1])
	}
	n := fc.settled(t)
	if n > stoppedAt+2 {
		t.Errorf("%d forward passes after stop (at %d): the generation did not stop within a token", n-stoppedAt, stoppedAt)
	}
	if s.gate.running() != 0 {
		t.Error("the stopped generation still holds its slot")
	}
	// The socket serves the next turn.
	fc.delay = 0
	wsSend(t, ctx, c, userTurn("Once upon a time", 3))
	msgs = chatTurnMsgs(t, ctx, c)
	if msgs[len(msgs)-1]["type"] != "done" {
		t.Errorf("next turn: %v", msgs[len(msgs)-1])
	}
}

// TestChatDisconnect: a page that goes away mid-reply cancels its generation; nothing leaks.
func TestChatDisconnect(t *testing.T) {
	fc := &forwardCounter{delay: 5 * time.Millisecond}
	cfg := storiesConfig(t)
	cfg.ForwardHook = fc.wrap
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, ctx, ts, "/ws/chat", nil)
	wsSend(t, ctx, c, userTurn("Once upon a time", 1500))
	for m := wsRecv(t, ctx, c); m["type"] != "token"; m = wsRecv(t, ctx, c) {
	}
	c.CloseNow()
	if n := fc.settled(t); n > 1000 {
		t.Errorf("%d forward passes: the generation outlived its page", n)
	}
}

// TestWebsocketLimits: a message over the size limit closes the socket with 1009; a page from
// another origin is refused.
func TestWebsocketLimits(t *testing.T) {
	cfg := storiesConfig(t)
	cfg.MaxMessageBytes = 1024
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, ctx, ts, "/ws/chat", nil)
	big := userTurn(strings.Repeat("x", 4096), 1)
	wsSend(t, ctx, c, big)
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("oversize message: %v", err)
	}

	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/ws/chat",
		&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin dial: %v %v", err, resp)
	}
	var e apiErr
	decode(t, resp, &e)
	if e.Error.Code != "bad_origin" {
		t.Errorf("error %+v", e.Error)
	}
	// The page's own origin may connect.
	c2 := dial(t, ctx, ts, "/ws/chat", http.Header{"Origin": {ts.URL}})
	c2.Close(websocket.StatusNormalClosure, "")
}

// TestChatSocketAuth: with an API key the socket needs the bearer token or the login cookie.
func TestChatSocketAuth(t *testing.T) {
	cfg := storiesConfig(t)
	cfg.APIKey = "k"
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws/chat"
	if _, resp, err := websocket.Dial(ctx, url, nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no key: %v", err)
	}
	if _, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer x"}}}); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong key: %v", err)
	}
	c := dial(t, ctx, ts, "/ws/chat", http.Header{"Authorization": {"Bearer k"}})
	c.Close(websocket.StatusNormalClosure, "")
	c = dial(t, ctx, ts, "/ws/chat", http.Header{"Cookie": {authCookie + "=" + cookieValue("k")}})
	c.Close(websocket.StatusNormalClosure, "")
}

// TestShutdown: shutting down lets a running reply finish within the grace period, refuses new
// work, closes the websockets and returns; a reply longer than the grace is cancelled.
func TestShutdown(t *testing.T) {
	fc := &forwardCounter{delay: 5 * time.Millisecond}
	cfg := storiesConfig(t)
	cfg.ForwardHook = fc.wrap
	cfg.ShutdownGrace = 300 * time.Millisecond
	s, err := New(func() Config { cfg.Logger = quiet; return cfg }())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeListener(ctx, ln) }()
	base := "ws://" + ln.Addr().String()
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(wctx, base+"/ws/chat", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	wsSend(t, wctx, c, userTurn("Once upon a time", 1500)) // ~7 s at 5 ms a token: longer than the grace
	for m := wsRecv(t, wctx, c); m["type"] != "token"; m = wsRecv(t, wctx, c) {
	}
	stop()
	var last map[string]any
	for {
		_, b, err := c.Read(wctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != websocket.StatusGoingAway && st != -1 {
				t.Errorf("close status %v", st)
			}
			break
		}
		if strings.Contains(string(b), `"done"`) {
			last = map[string]any{"done": string(b)}
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown hung")
	}
	if last == nil || !strings.Contains(last["done"].(string), "cancelled") {
		t.Errorf("the long reply was not cancelled at shutdown: %v", last)
	}
	if n := fc.settled(t); n > 1000 {
		t.Errorf("%d forward passes", n)
	}
}
