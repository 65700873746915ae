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
	Messages []chattemplate.Message `json:"messages"`
}

type completionRequest struct {
	commonRequest
	Prompt *stringList `json:"prompt"`
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
	Index        int          `json:"index"`
	Message      *chatMessage `json:"message,omitempty"`
	Delta        *chatMessage `json:"delta,omitempty"`
	Text         *string      `json:"text,omitempty"`
	FinishReason *string      `json:"finish_reason"`
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
	if err := checkMessages(req.Messages); err != nil {
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
	prompt, err := eng.RenderChat(req.Messages)
	if err != nil {
		return badRequest("messages", "%v", err)
	}
	p := GenParams{Prompt: prompt, MaxTokens: maxTokens, Sampler: smp, TrimLeading: true,
		Stops: append(chattemplate.Stops(eng.Template), req.Stop...)}
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
	return s.complete(c, eng, GenParams{Prompt: prompt, MaxTokens: maxTokens, Sampler: smp, Stops: req.Stop}, &req.commonRequest, false)
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
		res, err := eng.Generate(ctx, p, func(ev Event) error {
			if ev.Kind == EventToken {
				onFirst()
			}
			return nil
		})
		if err != nil {
			return err
		}
		fr := finishReason(res.Stop)
		ch := choice{FinishReason: &fr}
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
	res, err := eng.Generate(ctx, p, func(ev Event) error {
		if ev.Kind != EventToken || ev.Text == "" {
			return nil
		}
		onFirst()
		return send(chunk(ev.Text, "", nil))
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
