package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Request bodies as the official OpenAI client libraries write them (openai-python 1.x and
// openai-node 4.x serialize only the parameters given, in this shape), plus LangChain's and
// Open WebUI's content-part messages. Headers are the SDKs' too.
const (
	// client.chat.completions.create(model=..., messages=[...parts...], logprobs=True,
	// top_logprobs=3, response_format={"type": "json_object"}, seed=7, max_tokens=48)
	sdkChatJSONLogprobs = `{"messages":[{"role":"system","content":"Reply with one JSON object."},` +
		`{"role":"user","content":[{"type":"text","text":"Once upon a time"},{"type":"text","text":"there was a cat."}]}],` +
		`"model":"stories260K","logprobs":true,"max_tokens":48,"response_format":{"type":"json_object"},"seed":7,"top_logprobs":3}`
	// The same, streamed with usage (openai-node's stream: true, stream_options).
	sdkChatStream = `{"messages":[{"role":"user","content":[{"type":"text","text":"Once upon a time"}]}],` +
		`"model":"stories260K","logprobs":true,"top_logprobs":2,"max_tokens":12,"seed":7,"stream":true,"stream_options":{"include_usage":true},"temperature":0}`
	// LangChain ChatOpenAI: n and stream always sent.
	langchainChat = `{"messages":[{"content":"Once upon a time","role":"user"}],"model":"stories260K","stream":false,"n":1,"temperature":0.0,"max_tokens":8}`
	// An image part (Open WebUI with a picture attached).
	imagePart = `{"model":"stories260K","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`
	// tools (client.chat.completions.create(..., tools=[...])).
	sdkTools = `{"messages":[{"role":"user","content":"What is the weather in Paris?"}],"model":"stories260K",` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`
	// client.completions.create(model=..., prompt=..., logprobs=2, max_tokens=6, temperature=0)
	sdkCompletionLogprobs = `{"model":"stories260K","prompt":"Once upon a time","logprobs":2,"max_tokens":6,"temperature":0}`
)

func sdkPost(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "OpenAI/Python 1.54.4")
	req.Header.Set("X-Stainless-Lang", "python")
	req.Header.Set("X-Stainless-Package-Version", "1.54.4")
	req.Header.Set("Authorization", "Bearer sk-no-key-required")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type sdkLogprob struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	Bytes       []int   `json:"bytes"`
	TopLogprobs []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	} `json:"top_logprobs"`
}

func TestOpenAIClientShapes(t *testing.T) {
	s := mustNew(t, storiesConfig(t))
	ts := testServer(t, s)

	// Content parts, logprobs and json_object mode: the content parses as a JSON object, each
	// token has a log probability and three alternatives, sorted.
	for _, seed := range []string{`"seed":7`, `"seed":8`, `"seed":9`} {
		body := strings.Replace(sdkChatJSONLogprobs, `"seed":7`, seed, 1)
		r := sdkPost(t, ts.URL+"/v1/chat/completions", body)
		var resp struct {
			Choices []struct {
				Message      struct{ Role, Content string }
				FinishReason string `json:"finish_reason"`
				Logprobs     *struct {
					Content []sdkLogprob `json:"content"`
				} `json:"logprobs"`
			}
		}
		decode(t, r, &resp)
		c := resp.Choices[0]
		t.Logf("%s: %q (%s)", seed, c.Message.Content, c.FinishReason)
		var obj map[string]any
		if err := json.Unmarshal([]byte(c.Message.Content), &obj); err != nil {
			t.Fatalf("%s: json_object reply %q does not parse: %v", seed, c.Message.Content, err)
		}
		if c.Logprobs == nil || len(c.Logprobs.Content) == 0 {
			t.Fatalf("%s: no logprobs: %+v", seed, c)
		}
		for i, lp := range c.Logprobs.Content {
			if lp.Logprob > 0 || len(lp.TopLogprobs) != 3 || string(bytesOf(lp.Bytes)) != lp.Token {
				t.Fatalf("%s: token %d: %+v", seed, i, lp)
			}
			if lp.TopLogprobs[0].Logprob < lp.TopLogprobs[1].Logprob || lp.TopLogprobs[1].Logprob < lp.TopLogprobs[2].Logprob {
				t.Errorf("%s: token %d: top_logprobs not sorted: %+v", seed, i, lp.TopLogprobs)
			}
		}
	}

	// The same seed gives the same reply at temperature 1.
	first := body(t, sdkPost(t, ts.URL+"/v1/chat/completions", langchainChatSeeded))
	second := body(t, sdkPost(t, ts.URL+"/v1/chat/completions", langchainChatSeeded))
	if contentOf(t, first) != contentOf(t, second) {
		t.Errorf("seed 11 twice: %q and %q", contentOf(t, first), contentOf(t, second))
	}

	// Streamed: every token chunk carries its log probability.
	chunks, done := sseChunks(t, sdkPost(t, ts.URL+"/v1/chat/completions", sdkChatStream))
	if !done {
		t.Fatal("no [DONE]")
	}
	n := 0
	for _, ck := range chunks {
		for _, ch := range ck["choices"].([]any) {
			m := ch.(map[string]any)
			if lp, ok := m["logprobs"].(map[string]any); ok && lp != nil {
				content := lp["content"].([]any)
				n += len(content)
				if top := content[0].(map[string]any)["top_logprobs"].([]any); len(top) != 2 {
					t.Errorf("chunk top_logprobs %v", top)
				}
			}
		}
	}
	if n != 12 {
		t.Errorf("%d streamed logprobs for 12 tokens", n)
	}

	// LangChain's shape with n: 1.
	r := sdkPost(t, ts.URL+"/v1/chat/completions", langchainChat)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("langchain: %d %s", r.StatusCode, body(t, r))
	}
	r.Body.Close()

	// The legacy endpoint's logprobs shape.
	r = sdkPost(t, ts.URL+"/v1/completions", sdkCompletionLogprobs)
	var cmpl struct {
		Choices []struct {
			Text     string
			Logprobs struct {
				Tokens        []string             `json:"tokens"`
				TokenLogprobs []float64            `json:"token_logprobs"`
				TopLogprobs   []map[string]float64 `json:"top_logprobs"`
				TextOffset    []int                `json:"text_offset"`
			}
		}
	}
	decode(t, r, &cmpl)
	lp := cmpl.Choices[0].Logprobs
	if len(lp.Tokens) != 6 || len(lp.TokenLogprobs) != 6 || len(lp.TopLogprobs) != 6 || len(lp.TextOffset) != 6 {
		t.Errorf("completion logprobs %+v", lp)
	}

	// What is not supported is a clear 400 naming the field, never ignored.
	for _, tc := range []struct{ name, body, param, says string }{
		{"image part", imagePart, "messages[0].content[1]", `"image_url" part`},
		{"tools", sdkTools, "tools", "tool calling is not supported"},
		{"json_schema", `{"model":"stories260K","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{}}}}`, "response_format", "json_object"},
		{"top_logprobs alone", `{"model":"stories260K","messages":[{"role":"user","content":"x"}],"top_logprobs":2}`, "top_logprobs", "logprobs: true"},
		{"tool result", `{"model":"stories260K","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c1","content":"18C"}]}`, "messages[1]", "tool"},
	} {
		r := sdkPost(t, ts.URL+"/v1/chat/completions", tc.body)
		var e struct {
			Error struct{ Message, Param string }
		}
		if r.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d", tc.name, r.StatusCode)
		}
		decodeAny(t, r, &e)
		if e.Error.Param != tc.param || !strings.Contains(e.Error.Message, tc.says) {
			t.Errorf("%s: error %+v", tc.name, e.Error)
		}
	}
}

const langchainChatSeeded = `{"messages":[{"content":"Once upon a time","role":"user"}],"model":"stories260K","stream":false,"n":1,"temperature":1.0,"seed":11,"max_tokens":16}`

func bytesOf(b []int) []byte {
	out := make([]byte, len(b))
	for i, x := range b {
		out[i] = byte(x)
	}
	return out
}

func contentOf(t *testing.T, doc string) string {
	t.Helper()
	var v struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.Unmarshal([]byte(doc), &v); err != nil || len(v.Choices) == 0 {
		t.Fatalf("%q: %v", doc, err)
	}
	return v.Choices[0].Message.Content
}

// decodeAny decodes a response of any status.
func decodeAny(t *testing.T, r *http.Response, v any) {
	t.Helper()
	defer r.Body.Close()
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAIMultiTurnCache: the second turn of a conversation over the API, with a system
// prompt, reuses the cache of the whole first turn (its prompt and its reply): at least 90 % of
// the first turn's tokens are cached, and only the new message is prefilled.
func TestOpenAIMultiTurnCache(t *testing.T) {
	s := mustNew(t, storiesConfig(t))
	ts := testServer(t, s)
	type result struct {
		Choices []struct{ Message struct{ Content string } }
		Usage   struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
		KVLab struct {
			CachedTokens int `json:"cached_tokens"`
		}
	}
	ask := func(msgs []map[string]any, maxTokens int) result {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"model": "stories260K", "messages": msgs, "max_tokens": maxTokens, "temperature": 0.8, "seed": 3})
		var r result
		decode(t, sdkPost(t, ts.URL+"/v1/chat/completions", string(b)), &r)
		return r
	}
	for _, tc := range []struct {
		name  string
		first []map[string]any
	}{
		{"system prompt", []map[string]any{{"role": "system", "content": "Tell a story about a cat."}, {"role": "user", "content": "Once upon a time"}}},
		{"content parts", []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": "Lily had a red ball."}}}}},
	} {
		r1 := ask(tc.first, 40)
		firstTurn := r1.Usage.PromptTokens + r1.Usage.CompletionTokens
		msgs := append(tc.first, map[string]any{"role": "assistant", "content": r1.Choices[0].Message.Content},
			map[string]any{"role": "user", "content": "Then the sun came out."})
		r2 := ask(msgs, 10)
		t.Logf("%s: first turn %d tokens; second turn %d cached of %d", tc.name, firstTurn, r2.KVLab.CachedTokens, r2.Usage.PromptTokens)
		if float64(r2.KVLab.CachedTokens) < 0.9*float64(firstTurn) {
			t.Errorf("%s: second turn cached %d of the first turn's %d tokens", tc.name, r2.KVLab.CachedTokens, firstTurn)
		}
		// A third turn reuses the second's.
		msgs = append(msgs, map[string]any{"role": "assistant", "content": r2.Choices[0].Message.Content}, map[string]any{"role": "user", "content": "The end."})
		r3 := ask(msgs, 5)
		if second := r2.Usage.PromptTokens + r2.Usage.CompletionTokens; float64(r3.KVLab.CachedTokens) < 0.9*float64(second) {
			t.Errorf("%s: third turn cached %d of the second turn's %d tokens", tc.name, r3.KVLab.CachedTokens, second)
		}
	}
}
