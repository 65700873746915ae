package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestLoad holds 16 concurrent streaming chats on stories260K over loopback websockets, greedy,
// four different prompts: every stream must complete, its tokens numbered in order, with the
// same text as the prompt's reply generated alone. It logs the aggregate tokens/s and the p50
// and p99 time to first token (from sending the message to receiving the first token).
func TestLoad(t *testing.T) {
	const streams, tokens = 16, 200
	cfg := storiesConfig(t)
	cfg.MaxConcurrent = streams
	cfg.Threads = 0
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	prompts := []string{"Once upon a time", "The little dog", "Tom and Sue went to the park", "One day, a bird"}

	// Each prompt's reply, generated alone.
	want := map[string]string{}
	for _, p := range prompts {
		r, err := ts.Client().Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(
			fmt.Sprintf(`{"model":"stories260K","temperature":0,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, tokens, p)))
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Choices []struct{ Message struct{ Content string } }
		}
		decode(t, r, &res)
		want[p] = res.Choices[0].Message.Content
	}

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	results := make([]chatResult, streams)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = chatStream(ctx, ts.URL, prompts[i%len(prompts)], tokens, want[prompts[i%len(prompts)]])
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	var ttfts []time.Duration
	total := 0
	for i, r := range results {
		if r.err != nil {
			t.Errorf("stream %d: %v", i, r.err)
			continue
		}
		ttfts = append(ttfts, r.ttft)
		total += r.tokens
	}
	if len(ttfts) == 0 {
		return
	}
	slices.Sort(ttfts)
	pct := func(p float64) time.Duration { return ttfts[min(len(ttfts)-1, int(p*float64(len(ttfts))))] }
	t.Logf("%d concurrent streams × %d tokens: %d tokens in %v, %.0f tokens/s aggregate; time to first token p50 %v, p99 %v",
		streams, tokens, total, wall.Round(time.Millisecond), float64(total)/wall.Seconds(), pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond))
	if total != streams*tokens {
		t.Errorf("%d tokens, want %d", total, streams*tokens)
	}
}

// chatStream runs one greedy chat over /ws/chat and checks it: tokens numbered 1, 2, … in
// order, a done message with every token, and the expected text. ttft is the client's time
// from sending to the first token; runTTFT the runner's own (from its first pass's start, as
// the done message reports it), so ttft − runTTFT is the time spent before the model.
func chatStream(ctx context.Context, base, prompt string, tokens int, want string) (res chatResult) {
	return chatStreamAt(ctx, base, prompt, tokens, want, nil)
}

// chatResult is chatStream's result.
type chatResult struct {
	ttft, runTTFT time.Duration
	tokens        int
	err           error
}

// chatStreamAt is chatStream that, when ready is set, calls it once the connection is open
// and sends the chat when it returns: streams that wait for each other there send together,
// so that none's time to first token counts the others' connection set-up.
func chatStreamAt(ctx context.Context, base, prompt string, tokens int, want string, ready func()) (res chatResult) {
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws/chat", nil)
	if ready != nil {
		ready()
	}
	if err != nil {
		res.err = err
		return
	}
	defer c.CloseNow()
	msg, _ := json.Marshal(map[string]any{"type": "chat", "model": storiesName, "temperature": 0, "max_tokens": tokens,
		"messages": []map[string]string{{"role": "user", "content": prompt}}})
	sent := time.Now()
	if res.err = c.Write(ctx, websocket.MessageText, msg); res.err != nil {
		return
	}
	var text strings.Builder
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			res.err = err
			return
		}
		var m serverMessage
		if err := json.Unmarshal(b, &m); err != nil {
			res.err = err
			return
		}
		switch m.Type {
		case "token":
			if res.tokens == 0 {
				res.ttft = time.Since(sent)
			}
			if m.N != res.tokens+1 {
				res.err = fmt.Errorf("token %d after %d: out of order", m.N, res.tokens)
				return
			}
			res.tokens = m.N
			text.WriteString(m.Text)
		case "done":
			res.runTTFT = time.Duration(m.Result.TTFTMs * float64(time.Millisecond))
			if m.Result.Tokens != tokens || res.tokens != tokens {
				res.err = fmt.Errorf("done after %d tokens (result %d), want %d", res.tokens, m.Result.Tokens, tokens)
			} else if text.String() != want {
				res.err = fmt.Errorf("text %q, alone %q", text.String(), want)
			}
			c.Close(websocket.StatusNormalClosure, "")
			return
		case "error":
			res.err = fmt.Errorf("error: %s", m.Error)
			return
		}
	}
}
