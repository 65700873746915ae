package server

import (
	"math"
	"strings"

	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/server/chattemplate"
)

// Bounds of request fields.
const (
	maxStops     = 8
	maxStopBytes = 256
	maxMessages  = 4096
)

// samplingFields are the sampling parameters a request may set (OpenAI's names, plus top_k and
// min_p as llama.cpp's server accepts them). Nil means the default.
type samplingFields struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	TopK        *int     `json:"top_k,omitempty"`
	MinP        *float64 `json:"min_p,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
}

// sampler builds the sampler configuration, with the given defaults for unset fields.
func (f samplingFields) sampler(defTemp float64, seed uint64) (sample.Config, error) {
	cfg := sample.Config{Temp: float32(defTemp), TopP: 1, Seed: seed}
	if err := checkSamplingBounds(f); err != nil {
		return cfg, err
	}
	finite := func(name string, v *float64, lo, hi float64) (float32, error) {
		if math.IsNaN(*v) || *v < lo || *v > hi {
			return 0, badRequest(name, "%s %g: must be between %g and %g", name, *v, lo, hi)
		}
		return float32(*v), nil
	}
	var err error
	if f.Temperature != nil {
		if cfg.Temp, err = finite("temperature", f.Temperature, 0, 2); err != nil {
			return cfg, err
		}
	}
	if f.TopP != nil {
		if cfg.TopP, err = finite("top_p", f.TopP, 0, 1); err != nil {
			return cfg, err
		}
	}
	if f.MinP != nil {
		if cfg.MinP, err = finite("min_p", f.MinP, 0, 1); err != nil {
			return cfg, err
		}
	}
	if f.TopK != nil {
		if *f.TopK < 0 {
			return cfg, badRequest("top_k", "top_k %d: must not be negative", *f.TopK)
		}
		cfg.TopK = *f.TopK
	}
	if f.Seed != nil {
		cfg.Seed = uint64(*f.Seed)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, badRequest("", "%v", err)
	}
	return cfg, nil
}

// checkMaxTokens validates max_tokens: nil or positive.
func checkMaxTokens(name string, n *int) (int, error) {
	if n == nil {
		return 0, nil
	}
	if *n < 1 {
		return 0, badRequest(name, "%s %d: must be at least 1", name, *n)
	}
	if err := checkMaxTokensBound(name, *n); err != nil {
		return 0, err
	}
	return *n, nil
}

// checkMessages validates a conversation from a request.
func checkMessages(msgs []chattemplate.Message) error {
	if len(msgs) == 0 {
		return badRequest("messages", "messages: the conversation is empty; send at least one user message")
	}
	if len(msgs) > maxMessages {
		return badRequest("messages", "messages: %d messages, at most %d", len(msgs), maxMessages)
	}
	for i := range msgs {
		msgs[i].Role = strings.ToLower(msgs[i].Role)
		if msgs[i].Role == "developer" {
			msgs[i].Role = chattemplate.RoleSystem
		}
	}
	if err := chattemplate.Validate(msgs); err != nil {
		return badRequest("messages", "messages: %s", strings.TrimPrefix(err.Error(), "chattemplate: "))
	}
	return nil
}

// checkStops validates stop strings.
func checkStops(stops []string) error {
	if len(stops) > maxStops {
		return badRequest("stop", "stop: %d strings, at most %d", len(stops), maxStops)
	}
	for _, s := range stops {
		if len(s) > maxStopBytes {
			return badRequest("stop", "stop: a stop string is longer than %d bytes", maxStopBytes)
		}
	}
	return nil
}
