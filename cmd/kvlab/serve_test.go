package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/fixtures"
)

// TestServeRefuses: flags that would make the server unsafe or unusable fail before it listens.
func TestServeRefuses(t *testing.T) {
	t.Setenv("KVLAB_API_KEY", "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"public without a key", []string{"--addr", "0.0.0.0:0", "--no-discover"}, "api-key"},
		{"no slots", []string{"--max-concurrent", "0", "--no-discover"}, "--max-concurrent"},
		{"negative queue", []string{"--max-queue", "-1", "--no-discover"}, "--max-queue"},
		{"bad kv", []string{"--kv", "q9_9", "--no-discover"}, "--kv"},
		{"missing model", []string{"--model", "/nonexistent/model.gguf"}, "/nonexistent/model.gguf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error about %s", err, tc.want)
			}
		})
	}
}

// TestServeModel runs `kvlab serve --model stories260K.gguf` in-process: it loads the model at
// start, prints where it listens, answers /v1/models, and stops cleanly when cancelled.
func TestServeModel(t *testing.T) {
	model := fixtures.Path(t, "stories260K.gguf")
	cmd := newRootCmd()
	pr, pw := io.Pipe()
	cmd.SetOut(pw)
	var errOut strings.Builder
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--model", model, "--data", t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cmd.ExecuteContext(ctx)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var base string
	lines := 0
	for sc.Scan() {
		lines++
		if u, ok := strings.CutPrefix(sc.Text(), "kvlab: serving "); ok {
			base = strings.TrimSuffix(strings.Fields(u)[0], "/")
			break
		}
	}
	var rest strings.Builder
	copied := make(chan struct{})
	go func() { io.Copy(&rest, pr); close(copied) }()
	if base == "" {
		cancel()
		t.Fatalf("no banner; stderr: %s", errOut.String())
	}
	r, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct{ Data []struct{ ID string } }
	if err := json.NewDecoder(r.Body).Decode(&models); err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if len(models.Data) != 1 || models.Data[0].ID != "stories260K" {
		t.Errorf("models %+v", models)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	// On success serve prints one line, the URL, and nothing else (--verbose logs the rest).
	<-copied
	if lines != 1 || rest.Len() != 0 {
		t.Errorf("serve printed %d lines before its URL and %q after it", lines-1, rest.String())
	}
	if errOut.Len() != 0 {
		t.Errorf("serve wrote to stderr on success: %s", errOut.String())
	}
}
