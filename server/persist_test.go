package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvlab/kvlab/server/chattemplate"
)

// TestChatSurvivesRestart: a conversation continued after the server restarts reuses the KV
// snapshot of its first turn; a corrupt snapshot is dropped and the conversation prefilled
// again, with the same reply.
func TestChatSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := storiesConfig(t)
	cfg.DataDir = dir
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
	ask := func(s *Server, msgs []map[string]any, maxTokens int) result {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"model": "stories260K", "messages": msgs, "max_tokens": maxTokens, "temperature": 0})
		var r result
		decode(t, do(t, s.Handler(), "POST", "/v1/chat/completions", string(b)), &r)
		return r
	}
	first := []map[string]any{{"role": "user", "content": "Once upon a time"}}
	s1, err := New(withQuiet(cfg))
	if err != nil {
		t.Fatal(err)
	}
	r1 := ask(s1, first, 30)
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	firstTurn := r1.Usage.PromptTokens + r1.Usage.CompletionTokens
	msgs := append(first, map[string]any{"role": "assistant", "content": r1.Choices[0].Message.Content},
		map[string]any{"role": "user", "content": "Then the sun came out."})

	s2 := mustNew(t, cfg)
	r2 := ask(s2, msgs, 10)
	t.Logf("first turn %d tokens; after the restart %d cached of %d", firstTurn, r2.KVLab.CachedTokens, r2.Usage.PromptTokens)
	if float64(r2.KVLab.CachedTokens) < 0.9*float64(firstTurn) {
		t.Errorf("after the restart the second turn cached %d of the first turn's %d tokens", r2.KVLab.CachedTokens, firstTurn)
	}
	s2.Close()

	kvs, _ := filepath.Glob(filepath.Join(dir, "kv", "*", "*.kv"))
	if len(kvs) == 0 {
		t.Fatal("no KV snapshot on disk")
	}
	for _, p := range kvs {
		b, _ := os.ReadFile(p)
		b[len(b)/2] ^= 0xff
		os.WriteFile(p, b, 0o600)
	}
	s3 := mustNew(t, cfg)
	r3 := ask(s3, msgs, 10)
	if r3.KVLab.CachedTokens != 0 || r3.Choices[0].Message.Content != r2.Choices[0].Message.Content {
		t.Errorf("with corrupt snapshots: %d tokens cached, reply %q (want 0 and %q)", r3.KVLab.CachedTokens, r3.Choices[0].Message.Content, r2.Choices[0].Message.Content)
	}
}

func withQuiet(cfg Config) Config {
	cfg.Logger = quiet
	return cfg
}

// TestSessionsPersist: the chat sessions' messages are read back by a new server, expired ones
// are not.
func TestSessionsPersist(t *testing.T) {
	dir := t.TempDir()
	f := &sessionFiles{dir: dir, log: quiet}
	f.save(&session{ID: "a", Model: "m", Messages: []chattemplate.Message{{Role: "user", Content: "hi"}}, Updated: time.Now()})
	f.save(&session{ID: "old", Model: "m", Updated: time.Now().Add(-2 * time.Hour)})
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o600)
	got := f.load(time.Hour, 10)
	if len(got) != 1 || got[0].ID != "a" || got[0].Messages[0].Content != "hi" {
		t.Fatalf("loaded %+v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "old.json")); err == nil {
		t.Error("an expired session's file was kept")
	}
}

// TestSessionWriteOutsideLock: while one session's file is being written, the store serves
// other sessions (its lock is not held over the write); the session's removal waits for the
// write, so no file outlives its session.
func TestSessionWriteOutsideLock(t *testing.T) {
	dir := t.TempDir()
	hold, held := make(chan struct{}), make(chan struct{})
	st := newSessionStore(time.Hour, 10)
	st.files = &sessionFiles{dir: dir, log: quiet, saving: func(id string) {
		if id == "slow" {
			close(held)
			<-hold
		}
	}}
	msgs := []chattemplate.Message{{Role: "user", Content: "hi"}}
	st.put("other", "m", msgs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.put("slow", "m", msgs)
	}()
	<-held
	if _, ok := st.get("other"); !ok || st.len() != 2 {
		t.Fatal("the store lost a session during a write")
	}
	st.put("third", "m", msgs) // another session's write does not wait either
	removed := make(chan struct{})
	go func() {
		defer close(removed)
		st.delete("slow")
	}()
	close(hold)
	<-done
	<-removed
	for id, want := range map[string]bool{"other": true, "third": true, "slow": false} {
		if _, err := os.Stat(filepath.Join(dir, id+".json")); (err == nil) != want {
			t.Errorf("%s.json exists %v, want %v", id, err == nil, want)
		}
	}
}
