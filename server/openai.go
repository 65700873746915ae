package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kvlab/kvlab/server/chattemplate"
	"github.com/labstack/echo/v4"
)

// The OpenAI-compatible API: the request and response shapes of the chat and legacy completion
// endpoints, streaming as server-sent events (data: {chunk} … data: [DONE]).

// stringList is a JSON string or array of strings (OpenAI's "stop" and "prompt").
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = stringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("want a string or an array of strings")
	}
	*l = many
	return nil
}

// streamOptions is OpenAI's stream_options.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// commonRequest holds the fields of both endpoints.
type commonRequest struct {
	Model               string         `json:"model"`
	MaxTokens           *int           `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int           `json:"max_completion_tokens,omitempty"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
	Stop                stringList     `json:"stop,omitempty"`
	N                   *int           `json:"n,omitempty"`
	samplingFields
}

type chatCompletionRequest struct {
	commonRequest
	Messages []apiMessage `json:"messages"`
	// Logprobs asks for each token's log probability, with TopLogprobs (0–20) alternatives.
	Logprobs    *bool `json:"logprobs,omitempty"`
	TopLogprobs *int  `json:"top_logprobs,omitempty"`
	// ResponseFormat is {"type": "text"} or {"type": "json_object"}.
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
	// Tools and the older Functions ask for tool calls, which no chat format kvlab renders has.
	Tools        json.RawMessage `json:"tools,omitempty"`
	ToolChoice   json.RawMessage `json:"tool_choice,omitempty"`
	Functions    json.RawMessage `json:"functions,omitempty"`
	FunctionCall json.RawMessage `json:"function_call,omitempty"`
}

type completionRequest struct {
	commonRequest
	Prompt *stringList `json:"prompt"`
	// Logprobs (0–5) asks for each token's log probability and that many alternatives.
	Logprobs *int `json:"logprobs,omitempty"`
	Echo     bool `json:"echo,omitempty"`
}

// responseFormat is OpenAI's response_format.
type responseFormat struct {
	Type string `json:"type"`
}

// apiMessage is one message as OpenAI clients send it: the content a string, null, or an array
// of parts ([{"type": "text", "text": "…"}], as the SDKs, LangChain and Open WebUI send).
type apiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// contentPart is one element of an array content.
type contentPart struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

// chatMessages converts the request's messages: text parts are joined with newlines; a part of
// any other type, a tool call or a tool result is a 400 that says so.
func chatMessages(in []apiMessage) ([]chattemplate.Message, error) {
	out := make([]chattemplate.Message, len(in))
	for i, m := range in {
		param := fmt.Sprintf("messages[%d]", i)
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" || m.ToolCallID != "" || strings.EqualFold(m.Role, "tool") || strings.EqualFold(m.Role, "function") {
			return nil, badRequest(param, "%s: tool calls and tool results are not supported: no chat format kvlab renders has a tool-call syntax", param)
		}
		out[i].Role = m.Role
		raw := strings.TrimSpace(string(m.Content))
		switch {
		case raw == "" || raw == "null":
		case raw[0] == '"':
			if err := json.Unmarshal(m.Content, &out[i].Content); err != nil {
				return nil, badRequest(param+".content", "%s.content: not a valid string", param)
			}
		case raw[0] == '[':
			var parts []contentPart
			if err := json.Unmarshal(m.Content, &parts); err != nil {
				return nil, badRequest(param+".content", "%s.content: want a string or an array of {\"type\": \"text\", \"text\": …} parts", param)
			}
			texts := make([]string, 0, len(parts))
			for j, p := range parts {
				if p.Type != "text" {
					return nil, badRequest(fmt.Sprintf("%s.content[%d]", param, j),
						"%s.content[%d]: a %q part: this server reads text only; send text parts (type \"text\")", param, j, p.Type)
				}
				if p.Text == nil {
					return nil, badRequest(fmt.Sprintf("%s.content[%d]", param, j), "%s.content[%d]: a text part without text", param, j)
				}
				texts = append(texts, *p.Text)
			}
			out[i].Content = strings.Join(texts, "\n")
		default:
			return nil, badRequest(param+".content", "%s.content: want a string or an array of text parts", param)
		}
	}
	return out, nil
}

// checkExtras validates the chat fields beyond the shared ones: tools are refused, never
// ignored; response_format is text or json_object; top_logprobs needs logprobs.
func (r *chatCompletionRequest) checkExtras() error {
	present := func(b json.RawMessage) bool {
		v := strings.TrimSpace(string(b))
		return v != "" && v != "null" && v != "[]"
	}
	if present(r.Tools) || present(r.Functions) {
		return badRequest("tools", "tools: tool calling is not supported: the chat formats kvlab renders (Llama 2, Llama 3, ChatML, Gemma, plain) have no tool-call syntax here; send the request without tools")
	}
	if v := strings.TrimSpace(string(r.ToolChoice)); present(r.ToolChoice) && v != `"none"` && v != `"auto"` {
		return badRequest("tool_choice", "tool_choice: no tools are supported, so no tool can be chosen")
	}
	if present(r.FunctionCall) && strings.TrimSpace(string(r.FunctionCall)) != `"none"` {
		return badRequest("function_call", "function_call: no functions are supported")
	}
	if f := r.ResponseFormat; f != nil {
		switch f.Type {
		case "", "text", "json_object":
		case "json_schema":
			return badRequest("response_format", "response_format json_schema is not supported; use {\"type\": \"json_object\"}, which guarantees a JSON object")
		default:
			return badRequest("response_format", "response_format type %q: want \"text\" or \"json_object\"", f.Type)
		}
	}
	if r.TopLogprobs != nil {
		if *r.TopLogprobs < 0 || *r.TopLogprobs > 20 {
			return badRequest("top_logprobs", "top_logprobs %d: must be between 0 and 20", *r.TopLogprobs)
		}
		if r.Logprobs == nil || !*r.Logprobs {
			return badRequest("top_logprobs", "top_logprobs needs logprobs: true")
		}
	}
	return nil
}

// The logprobs of a choice: OpenAI's chat shape (content) and the legacy completion shape.
type logprobEntry struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

// topLogprob is one alternative of a logprobEntry.
type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type choiceLogprobs struct {
	// Content is the chat shape.
	Content []logprobEntry `json:"content,omitempty"`
	// Tokens, TokenLogprobs, TopLogprobs and TextOffset are the completion shape.
	Tokens        []string             `json:"tokens,omitempty"`
	TokenLogprobs []float64            `json:"token_logprobs,omitempty"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs,omitempty"`
	TextOffset    []int                `json:"text_offset,omitempty"`
}

func byteInts(s string) []int {
	b := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		b[i] = int(s[i])
	}
	return b
}

// add appends one token's log probability in the chat or completion shape.
func (l *choiceLogprobs) add(lp *TokenLogprob, chat bool, offset int) {
	if chat {
		e := logprobEntry{Token: lp.Text, Logprob: lp.Logprob, Bytes: byteInts(lp.Text), TopLogprobs: []topLogprob{}}
		for _, t := range lp.Top {
			e.TopLogprobs = append(e.TopLogprobs, topLogprob{Token: t.Text, Logprob: t.Logprob, Bytes: byteInts(t.Text)})
		}
		l.Content = append(l.Content, e)
		return
	}
	l.Tokens = append(l.Tokens, lp.Text)
	l.TokenLogprobs = append(l.TokenLogprobs, lp.Logprob)
	top := map[string]float64{}
	for _, t := range lp.Top {
		if _, ok := top[t.Text]; !ok {
			top[t.Text] = t.Logprob
		}
	}
	l.TopLogprobs = append(l.TopLogprobs, top)
	l.TextOffset = append(l.TextOffset, offset)
}

// usage is OpenAI's token accounting.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// kvlabStats are kvlab's additions to a response: speeds and the KV cache.
type kvlabStats struct {
	KVFormat     string  `json:"kv_format"`
	KVBytes      int64   `json:"kv_bytes"`
	Device       string  `json:"device,omitempty"`
	Ctx          int     `json:"ctx"`
	CtxUsed      int     `json:"ctx_used"`
	CachedTokens int     `json:"cached_tokens"`
	PromptTPS    float64 `json:"prompt_tokens_per_second"`
	DecodeTPS    float64 `json:"decode_tokens_per_second"`
	TTFTMs       float64 `json:"time_to_first_token_ms"`
}

type chatMessage struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
}

type choice struct {
	Index        int             `json:"index"`
	Message      *chatMessage    `json:"message,omitempty"`
	Delta        *chatMessage    `json:"delta,omitempty"`
	Text         *string         `json:"text,omitempty"`
	Logprobs     *choiceLogprobs `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type completionResponse struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Choices []choice    `json:"choices"`
	Usage   *usage      `json:"usage,omitempty"`
	KVLab   *kvlabStats `json:"kvlab,omitempty"`
}

// finishReason maps a stop reason to OpenAI's.
func finishReason(stop string) string {
	if stop == StopEOS || stop == StopString {
		return "stop"
	}
	return "length"
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func itoa(n int) string { return strconv.Itoa(n) }

// openaiModels is GET /v1/models.
func (s *Server) openaiModels(c echo.Context) error {
	type entry struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []entry `json:"data"`
	}{Object: "list", Data: []entry{}}
	for _, m := range s.models.list() {
		if supported(m) {
			out.Data = append(out.Data, entry{ID: m.Name, Object: "model", Created: s.started.Unix(), OwnedBy: string(m.Source)})
		}
	}
	return c.JSON(http.StatusOK, out)
}

// validate checks the shared fields and returns max tokens.
func (r *commonRequest) validate() (int, error) {
	if r.N != nil && *r.N != 1 {
		return 0, badRequest("n", "n %d: only one choice per request is supported", *r.N)
	}
	if err := checkStops(r.Stop); err != nil {
		return 0, err
	}
	if r.MaxCompletionTokens != nil {
		return checkMaxTokens("max_completion_tokens", r.MaxCompletionTokens)
	}
	return checkMaxTokens("max_tokens", r.MaxTokens)
}

// chatCompletions is POST /v1/chat/completions.
func (s *Server) chatCompletions(c echo.Context) error {
	var req chatCompletionRequest
	if err := s.decodeJSON(c, &req); err != nil {
		return err
	}
	maxTokens, err := req.validate()
	if err != nil {
		return err
	}
	if err := req.checkExtras(); err != nil {
		return err
	}
	msgs, err := chatMessages(req.Messages)
	if err != nil {
		return err
	}
	if err := checkMessages(msgs); err != nil {
		return err
	}
	smp, err := req.sampler(1, uint64(time.Now().UnixNano()))
	if err != nil {
		return err
	}
	eng, err := s.models.get(req.Model)
	if err != nil {
		return err
	}
	prompt, cp, err := eng.RenderChatText(msgs)
	if err != nil {
		return badRequest("messages", "%v", err)
	}
	p := GenParams{Prompt: prompt, MaxTokens: maxTokens, Sampler: smp, TrimLeading: true, PromptText: cp.Text, PromptLayout: cp.Layout,
		Stops: append(chattemplate.Stops(eng.Template), req.Stop...)}
	if req.Logprobs != nil && *req.Logprobs {
		p.Logprobs = true
		if req.TopLogprobs != nil {
			p.TopLogprobs = *req.TopLogprobs
		}
	}
	if req.ResponseFormat != nil && req.ResponseFormat.Type == "json_object" {
		p.Constrain = newJSONConstraint(eng.Tok)
	}
	return s.complete(c, eng, p, &req.commonRequest, true)
}

// completions is POST /v1/completions: the prompt is continued as it is (BOS prepended).
func (s *Server) completions(c echo.Context) error {
	var req completionRequest
	if err := s.decodeJSON(c, &req); err != nil {
		return err
	}
	maxTokens, err := req.validate()
	if err != nil {
		return err
	}
	if req.Prompt == nil {
		return badRequest("prompt", "prompt is required")
	}
	if len(*req.Prompt) != 1 {
		return badRequest("prompt", "prompt: send one string (batches of %d prompts are not supported)", len(*req.Prompt))
	}
	if maxTokens == 0 {
		maxTokens = 16 // OpenAI's default for this endpoint
	}
	if req.Echo {
		return badRequest("echo", "echo is not supported: the reply holds only the continuation")
	}
	if req.Logprobs != nil && (*req.Logprobs < 0 || *req.Logprobs > 5) {
		return badRequest("logprobs", "logprobs %d: must be between 0 and 5", *req.Logprobs)
	}
	smp, err := req.sampler(1, uint64(time.Now().UnixNano()))
	if err != nil {
		return err
	}
	eng, err := s.models.get(req.Model)
	if err != nil {
		return err
	}
	prompt, err := eng.Encode((*req.Prompt)[0], false)
	if err != nil {
		return err
	}
	p := GenParams{Prompt: prompt, MaxTokens: maxTokens, Sampler: smp, Stops: req.Stop}
	if req.Logprobs != nil {
		p.Logprobs, p.TopLogprobs = true, *req.Logprobs
	}
	return s.complete(c, eng, p, &req.commonRequest, false)
}

// complete runs a generation for either endpoint, streamed as server-sent events or answered
// as one JSON document. A client that disconnects cancels the generation.
func (s *Server) complete(c echo.Context, eng *Engine, p GenParams, req *commonRequest, chat bool) error {
	if len(p.Prompt) > eng.Ctx {
		return &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Code: "context_length_exceeded", Param: "messages",
			Message: fmt.Sprintf("the prompt is %d tokens, longer than the model's context of %d tokens", len(p.Prompt), eng.Ctx)}
	}
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	accepted := time.Now()
	release, err := s.gate.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()

	id, object := newID("cmpl-"), "text_completion"
	if chat {
		id, object = newID("chatcmpl-"), "chat.completion"
	}
	created := time.Now().Unix()
	first := true
	onFirst := func() {
		if first {
			first = false
			s.metrics.firstToken(eng.Info.Name, time.Since(accepted).Seconds())
		}
	}
	if !req.Stream {
		var lps *choiceLogprobs
		if p.Logprobs {
			lps = &choiceLogprobs{}
		}
		offset := 0
		res, err := eng.Generate(ctx, p, func(ev Event) error {
			if ev.Kind == EventToken {
				onFirst()
				if lps != nil && ev.Logprob != nil {
					lps.add(ev.Logprob, chat, offset)
				}
				offset += len(ev.Text)
			}
			return nil
		})
		if err != nil {
			return err
		}
		fr := finishReason(res.Stop)
		ch := choice{FinishReason: &fr, Logprobs: lps}
		if chat {
			ch.Message = &chatMessage{Role: chattemplate.RoleAssistant, Content: res.Text}
		} else {
			ch.Text = &res.Text
		}
		return c.JSON(http.StatusOK, completionResponse{ID: id, Object: object, Created: created, Model: eng.Info.Name,
			Choices: []choice{ch}, Usage: usageOf(res), KVLab: statsOf(res)})
	}

	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	object += ".chunk"
	if !chat {
		object = "text_completion"
	}
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		w.Flush()
		return ctx.Err()
	}
	chunk := func(text string, role string, fr *string) completionResponse {
		ch := choice{FinishReason: fr}
		if p.Logprobs && fr == nil && role == "" {
			ch.Logprobs = &choiceLogprobs{}
		}
		if chat {
			ch.Delta = &chatMessage{Role: role, Content: text}
		} else {
			ch.Text = &text
		}
		return completionResponse{ID: id, Object: object, Created: created, Model: eng.Info.Name, Choices: []choice{ch}}
	}
	if chat {
		if err := send(chunk("", chattemplate.RoleAssistant, nil)); err != nil {
			return nil
		}
	}
	offset := 0
	res, err := eng.Generate(ctx, p, func(ev Event) error {
		if ev.Kind != EventToken || ev.Text == "" && ev.Logprob == nil {
			return nil
		}
		onFirst()
		ck := chunk(ev.Text, "", nil)
		if l := ck.Choices[0].Logprobs; l != nil && ev.Logprob != nil {
			l.add(ev.Logprob, chat, offset)
		}
		offset += len(ev.Text)
		return send(ck)
	})
	if err != nil {
		if res.Stop != StopCancelled {
			ae := asAPIError(err)
			_ = send(errorBody{ae})
		}
		return nil
	}
	fr := finishReason(res.Stop)
	last := chunk("", "", &fr)
	last.KVLab = statsOf(res)
	if err := send(last); err != nil {
		return nil
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		u := completionResponse{ID: id, Object: object, Created: created, Model: eng.Info.Name, Choices: []choice{}, Usage: usageOf(res)}
		if err := send(u); err != nil {
			return nil
		}
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	w.Flush()
	return nil
}

func usageOf(r GenResult) *usage {
	return &usage{PromptTokens: r.PromptTokens, CompletionTokens: r.Tokens, TotalTokens: r.PromptTokens + r.Tokens}
}

func statsOf(r GenResult) *kvlabStats {
	return &kvlabStats{KVFormat: r.KVFormat, KVBytes: r.KVBytes, Device: r.Device, Ctx: r.Ctx, CtxUsed: r.CtxUsed, CachedTokens: r.CachedTokens,
		PromptTPS: r.PromptTPS, DecodeTPS: r.DecodeTPS, TTFTMs: r.TTFTMs}
}
