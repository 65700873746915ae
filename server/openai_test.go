package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// storiesGreedy is the start of stories260K's greedy continuation of "Once upon a time"
// (../shared/models/README.md).
const storiesGreedy = ", there was a little girl named Lily. She loved to play outside in the park."

// sseChunks reads a server-sent event stream: the data of every event, until [DONE].
func sseChunks(t *testing.T, r *http.Response) (chunks []map[string]any, done bool) {
	t.Helper()
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if data == "[DONE]" {
			return chunks, true
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks = append(chunks, m)
	}
	return chunks, false
}

// deltaText joins the text of chat (delta.content) or completion (text) chunks.
func deltaText(chunks []map[string]any) (string, string) {
	var b strings.Builder
	finish := ""
	for _, c := range chunks {
		for _, ch := range c["choices"].([]any) {
			m := ch.(map[string]any)
			if d, ok := m["delta"].(map[string]any); ok {
				s, _ := d["content"].(string)
				b.WriteString(s)
			}
			if s, ok := m["text"].(string); ok {
				b.WriteString(s)
			}
			if f, ok := m["finish_reason"].(string); ok {
				finish = f
			}
		}
	}
	return b.String(), finish
}

// TestOpenAI runs the OpenAI-compatible endpoints on stories260K, greedy: streamed and not,
// they write the same text, which is the reference continuation.
func TestOpenAI(t *testing.T) {
	s := mustNew(t, storiesConfig(t))
	ts := testServer(t, s)
	post := func(path, body string) *http.Response {
		t.Helper()
		r, err := ts.Client().Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	var plain struct {
		Object  string
		Choices []struct {
			Message      struct{ Role, Content string }
			Text         string
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
		KVLab struct {
			KVFormat string `json:"kv_format"`
			KVBytes  int64  `json:"kv_bytes"`
		}
	}
	r := post("/v1/chat/completions", `{"model":"stories260K","temperature":0,"max_tokens":20,"messages":[{"role":"user","content":"Once upon a time"}]}`)
	decode(t, r, &plain)
	c := plain.Choices[0]
	if plain.Object != "chat.completion" || c.Message.Role != "assistant" || c.FinishReason != "length" || plain.Usage.CompletionTokens != 20 {
		t.Errorf("response %+v", plain)
	}
	if !strings.HasPrefix(storiesGreedy, ","+strings.TrimPrefix(c.Message.Content, ",")) || len(c.Message.Content) < 40 {
		t.Errorf("greedy text %q, want a prefix of %q", c.Message.Content, storiesGreedy)
	}
	if plain.KVLab.KVFormat != "f16/f16" || plain.KVLab.KVBytes <= 0 {
		t.Errorf("kvlab stats %+v", plain.KVLab)
	}
	want := c.Message.Content

	// Streamed, the same text in chunks, a role first, then [DONE].
	r = post("/v1/chat/completions", `{"model":"stories260K","temperature":0,"max_tokens":20,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Once upon a time"}]}`)
	if ct := r.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	chunks, done := sseChunks(t, r)
	if !done {
		t.Fatal("the stream did not end with data: [DONE]")
	}
	got, finish := deltaText(chunks)
	if got != want || finish != "length" {
		t.Errorf("streamed %q (finish %q), non-streamed %q", got, finish, want)
	}
	if role := chunks[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)["role"]; role != "assistant" {
		t.Errorf("first chunk's role %v", role)
	}
	if u, ok := chunks[len(chunks)-1]["usage"].(map[string]any); !ok || u["completion_tokens"].(float64) != 20 {
		t.Errorf("last chunk %v has no usage", chunks[len(chunks)-1])
	}
	if len(chunks) < 10 {
		t.Errorf("only %d chunks: not streamed token by token", len(chunks))
	}

	// The legacy endpoint continues the prompt as it is.
	r = post("/v1/completions", `{"model":"stories260K","temperature":0,"max_tokens":20,"prompt":"Once upon a time"}`)
	decode(t, r, &plain)
	if plain.Choices[0].Text != want {
		t.Errorf("completion %q, chat %q", plain.Choices[0].Text, want)
	}
	r = post("/v1/completions", `{"model":"stories260K","temperature":0,"max_tokens":20,"prompt":["Once upon a time"],"stream":true}`)
	chunks, done = sseChunks(t, r)
	if got, _ := deltaText(chunks); !done || got != want {
		t.Errorf("streamed completion %q, done %v", got, done)
	}

	// A stop string ends the reply before it.
	r = post("/v1/completions", `{"model":"stories260K","temperature":0,"max_tokens":40,"prompt":"Once upon a time","stop":["Lily"]}`)
	decode(t, r, &plain)
	if plain.Choices[0].Text != ", there was a little girl named " || plain.Choices[0].FinishReason != "stop" {
		t.Errorf("with stop: %q %s", plain.Choices[0].Text, plain.Choices[0].FinishReason)
	}

	// The metrics count the tokens and the requests.
	r, err := ts.Client().Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m := body(t, r)
	for _, want := range []string{`kvlab_tokens_total{kind="generated",model="stories260K"}`, `kvlab_http_requests_total{code="200",route="/v1/chat/completions"}`,
		`kvlab_decode_tokens_per_second{model="stories260K"}`, `kvlab_kv_bytes{format="f16/f16",model="stories260K"}`, `kvlab_time_to_first_token_seconds_count{model="stories260K"}`,
		`kvlab_batch_size{model="stories260K"}`, `kvlab_batch_queue{model="stories260K"} 0`, `kvlab_batch_passes_total{model="stories260K"}`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// /v1/models lists it.
	r, err = ts.Client().Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct{ Data []struct{ ID string } }
	decode(t, r, &models)
	if len(models.Data) != 1 || models.Data[0].ID != storiesName {
		t.Errorf("models %+v", models)
	}
}

// TestSSEDisconnect: a client that goes away mid-stream cancels its generation; the forward
// passes stop and no goroutine is left (TestMain checks).
func TestSSEDisconnect(t *testing.T) {
	fc := &forwardCounter{delay: 5 * time.Millisecond}
	cfg := storiesConfig(t)
	cfg.ForwardHook = fc.wrap
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"stories260K","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"Once upon a time"}]}`))
	req.Header.Set("Content-Type", "application/json")
	r, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(r.Body)
	for n := 0; n < 5 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	cancel()
	r.Body.Close()
	n := fc.settled(t)
	if n >= 1000 {
		t.Errorf("%d forward passes: the generation ran to the end", n)
	}
	if got := s.gate.running(); got != 0 {
		t.Errorf("%d generations still hold a slot", got)
	}
}

// TestBusy: past the slots and the queue, a request gets 503 with a "busy" JSON error at once.
func TestBusy(t *testing.T) {
	fc := &forwardCounter{delay: 20 * time.Millisecond}
	cfg := storiesConfig(t)
	cfg.ForwardHook = fc.wrap
	cfg.MaxConcurrent, cfg.MaxQueue = 1, -1
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions",
		strings.NewReader(`{"model":"stories260K","max_tokens":500,"stream":true,"prompt":"Once"}`))
	req.Header.Set("Content-Type", "application/json")
	r, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	bufio.NewReader(r.Body).ReadString('\n') // the first chunk: the slot is taken
	r2, err := ts.Client().Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"stories260K","prompt":"Once"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r2.StatusCode != http.StatusServiceUnavailable || r2.Header.Get("Retry-After") == "" {
		t.Errorf("status %d, Retry-After %q", r2.StatusCode, r2.Header.Get("Retry-After"))
	}
	var e apiErr
	decode(t, r2, &e)
	if e.Error.Code != "busy" || !strings.Contains(e.Error.Message, "busy") {
		t.Errorf("error %+v", e.Error)
	}
	cancel()
	fc.settled(t)
}

// TestQueue: with one slot, concurrent requests wait their turn and all complete; a chat that
// waits is told "queued".
func TestQueue(t *testing.T) {
	fc := &forwardCounter{delay: 2 * time.Millisecond}
	cfg := storiesConfig(t)
	cfg.ForwardHook = fc.wrap
	cfg.MaxConcurrent = 1
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, ctx, ts, "/ws/chat", nil)
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			r, err := ts.Client().Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"stories260K","max_tokens":30,"prompt":"Once"}`))
			if err == nil {
				if r.StatusCode != 200 {
					err = fmt.Errorf("status %d", r.StatusCode)
				}
				r.Body.Close()
			}
			errs <- err
		}()
	}
	for s.gate.running() == 0 {
		time.Sleep(time.Millisecond)
	}
	wsSend(t, ctx, c, userTurn("Once", 5))
	msgs := chatTurnMsgs(t, ctx, c)
	if msgs[0]["type"] != "queued" || msgs[len(msgs)-1]["type"] != "done" {
		t.Errorf("chat while busy: first %v, last %v", msgs[0], msgs[len(msgs)-1])
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
