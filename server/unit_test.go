package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/calc"
)

// TestPolicy checks the boot-time choice: the least compressing rung that fits the free memory
// less the weights and the reserve, the user's pair when given, and f16 when memory is unknown.
func TestPolicy(t *testing.T) {
	shape, err := calc.LookupPreset("qwen2.5-14b-1m")
	if err != nil {
		t.Fatal(err)
	}
	weights := int64(15 << 30)
	reserve := calc.DefaultReserveBytes
	for _, tc := range []struct {
		name    string
		free    int64
		user    kvq.Pair
		memErr  error
		want    string
		fits    bool
		inWords string
	}{
		{"plenty", weights + reserve + 7<<30, kvq.Pair{}, nil, "f16/f16", true, "fits budget"},
		{"tight", weights + reserve + 3328<<20, kvq.Pair{}, nil, "q8_0/q8_0", true, "q8_0/q8_0: KV 3264 MiB fits budget 3328 MiB"},
		{"tighter", weights + reserve + 2728<<20, kvq.Pair{}, nil, "q8_0/q4_0", true, "fits budget 2728 MiB"},
		{"floor", weights + reserve + 1<<30, kvq.Pair{}, nil, "q5_1/q4_0", false, "ladder floor"},
		{"user", weights + reserve + 1<<30, kvq.Pair{K: kvq.Q4_0, V: kvq.Q4_0}, nil, "q4_0/q4_0", false, "user-chosen"},
		{"unknown memory", 0, kvq.Pair{}, errors.New("no /proc"), "f16/f16", false, "free memory unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, d, err := choosePair(tc.user, shape.Shape, 32768, 1, weights, MemInfo{FreeBytes: tc.free}, tc.memErr)
			if err != nil {
				t.Fatal(err)
			}
			if calc.PairName(p) != tc.want || d.Format != tc.want || (tc.memErr == nil && d.Fits != tc.fits) || !strings.Contains(d.Reason, tc.inWords) {
				t.Errorf("chose %s (%+v)", calc.PairName(p), d)
			}
		})
	}
}

func FuzzParseClientMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"chat","session":"abc","model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"temperature":0.5}`,
		`{"type":"stop"}`, `{"type":"chat","messages":[{"role":"system","content":"x"},{"role":"assistant","content":"y"}]}`,
		`{"type":"chat","max_tokens":-1}`, `{"type":"chat","top_k":-3,"messages":[{"role":"user","content":""}]}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := parseClientMessage(data)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Message == "" {
				t.Fatalf("error %v is not a 400 apiError", err)
			}
			return
		}
		if req.Type == "chat" && (len(req.Messages) == 0 || req.maxTokens < 0) {
			t.Fatalf("accepted %+v", req)
		}
	})
}

func FuzzParseLabMessage(f *testing.F) {
	for _, s := range []string{`{"type":"start","model":"m","arms":["f16","q4_0"],"n":8}`, `{"type":"stop"}`, `{"type":"x"}`, `{"arms":7}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseLabMessage(data)
		if err == nil && m.Type != "start" && m.Type != "stop" {
			t.Fatalf("accepted type %q", m.Type)
		}
	})
}
