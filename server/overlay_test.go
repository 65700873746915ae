package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestServeOverlay: Config.KVWindow and KVSinks (serve --kv-window/--kv-sink) give every cache
// the FP16 overlay: generation works and each cache holds the overlay's bytes too.
func TestServeOverlay(t *testing.T) {
	kvBytes := func(window, sinks int) int64 {
		cfg := storiesConfig(t)
		cfg.KV, cfg.KVWindow, cfg.KVSinks = "q4_0", window, sinks
		ts := testServer(t, mustNew(t, cfg))
		r, err := ts.Client().Post(ts.URL+"/v1/completions", "application/json",
			strings.NewReader(`{"model":"stories260K","temperature":0,"max_tokens":24,"prompt":"Once upon a time"}`))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Choices []struct{ Text string }
			KVLab   struct {
				KVBytes int64 `json:"kv_bytes"`
			}
		}
		if r.StatusCode != http.StatusOK {
			t.Fatalf("status %d", r.StatusCode)
		}
		decode(t, r, &v)
		if len(v.Choices) != 1 || len(v.Choices[0].Text) < 20 {
			t.Fatalf("window %d: reply %+v", window, v)
		}
		return v.KVLab.KVBytes
	}
	plain, overlay := kvBytes(0, 0), kvBytes(64, 4)
	if overlay <= plain {
		t.Errorf("a cache with the overlay holds %d bytes, without %d", overlay, plain)
	}
	cfg := storiesConfig(t)
	cfg.KVWindow = -1
	s := mustNew(t, cfg)
	r := do(t, s.Handler(), http.MethodPost, "/v1/completions", `{"model":"stories260K","prompt":"x","max_tokens":1}`)
	if r.StatusCode == http.StatusOK {
		t.Error("a negative window was accepted")
	}
}
