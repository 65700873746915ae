package server

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/runner"
)

// Persistence across restarts (Config.DataDir): the chat sessions' messages, and per model the
// chat turns the engine remembers with a KV snapshot of each (kvcache's versioned format), so
// that a conversation continued after a restart reuses its cache instead of prefilling again.
//
//	DataDir/sessions/ID.json                    a session's messages
//	DataDir/kv/MODELHASH/KEY.turn, KEY.kv        a turn (JSON) and its sequence's snapshot
//
// The snapshots are bounded in total (Config.SessionBytes), the least recently written dropped
// first. A snapshot that does not load (corrupt, truncated, another version this build cannot
// read) is logged and deleted; its turn is kept and its conversation prefilled again.

// DefaultSessionBytes bounds the KV snapshots kept on disk per model.
const DefaultSessionBytes = 1 << 30

// maxTurnFile bounds a turn file read back.
const maxTurnFile = 64 << 20

// writeFileAtomic writes b to path through a synced temporary file renamed over it.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// removeTemps deletes the temporary files a killed write left in dir.
func removeTemps(dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	for _, t := range tmps {
		os.Remove(t)
	}
}

// sessionFiles persists sessionStore's sessions.
type sessionFiles struct {
	dir string
	log *slog.Logger
	// saving, when set, is called as a file starts being written (tests hold a write there).
	saving func(id string)
}

func (f *sessionFiles) path(id string) string { return filepath.Join(f.dir, id+".json") }

// save writes s's file; a nil store (no persistence) writes nothing.
func (f *sessionFiles) save(s *session) {
	if f == nil {
		return
	}
	if f.saving != nil {
		f.saving(s.ID)
	}
	b, err := json.Marshal(s)
	if err == nil {
		err = writeFileAtomic(f.path(s.ID), b)
	}
	if err != nil {
		f.log.Warn("chat session not saved", "session", s.ID, "err", err)
	}
}

// remove deletes id's file; a nil store has none.
func (f *sessionFiles) remove(id string) {
	if f != nil {
		os.Remove(f.path(id))
	}
}

// load reads the saved sessions updated within ttl, at most max (the most recent).
func (f *sessionFiles) load(ttl time.Duration, max int) []*session {
	removeTemps(f.dir)
	names, _ := filepath.Glob(filepath.Join(f.dir, "*.json"))
	var out []*session
	for _, name := range names {
		id := strings.TrimSuffix(filepath.Base(name), ".json")
		st, err := os.Stat(name)
		if !sessionID.MatchString(id) || err != nil || st.Size() > maxTurnFile {
			continue
		}
		b, err := os.ReadFile(name)
		var s session
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil || s.ID != id || time.Since(s.Updated) > ttl {
			os.Remove(name) // unreadable or expired
			continue
		}
		out = append(out, &s)
	}
	slices.SortFunc(out, func(a, b *session) int { return b.Updated.Compare(a.Updated) })
	return out[:min(len(out), max)]
}

// kvPersist keeps one engine's turns and their KV snapshots.
type kvPersist struct {
	dir string
	id  kvcache.Identity
	max int64
	log *slog.Logger
	mu  sync.Mutex // one save or prune at a time
}

// turnFile is a turn as saved.
type turnFile struct {
	Layout       []int   `json:"layout"`
	Prompt       string  `json:"prompt"`
	PromptTokens []int32 `json:"prompt_tokens"`
	Reply        string  `json:"reply"`
	ReplyTokens  []int32 `json:"reply_tokens"`
	Saved        time.Time
}

func newKVPersist(dataDir string, id kvcache.Identity, max int64, log *slog.Logger) (*kvPersist, error) {
	dir := filepath.Join(dataDir, "kv", hex.EncodeToString(id.Hash[:12]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	removeTemps(dir)
	return &kvPersist{dir: dir, id: id, max: max, log: log}, nil
}

// key names a turn's files by its tokens.
func turnKey(t turn) string {
	return runner.TokensKey(append(slices.Clone(t.promptTokens), t.replyTokens...))
}

// save writes the turn and the snapshot of the sequence that holds it (tokens: its prompt and
// generated tokens), then prunes past the size bound.
func (p *kvPersist) save(r *runner.Runner, t turn, tokens []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := turnKey(t)
	kvPath := filepath.Join(p.dir, key+".kv")
	if err := r.SaveSnapshot(kvPath, p.id, tokens); err != nil {
		p.log.Debug("KV snapshot not saved", "err", err)
		return
	}
	b, err := json.Marshal(turnFile{Layout: t.layout, Prompt: t.prompt, PromptTokens: t.promptTokens, Reply: t.reply, ReplyTokens: t.replyTokens, Saved: time.Now()})
	if err == nil {
		err = writeFileAtomic(filepath.Join(p.dir, key+".turn"), b)
	}
	if err != nil {
		os.Remove(kvPath)
		p.log.Warn("chat turn not saved", "err", err)
		return
	}
	p.prune()
}

// entry is one saved turn's files.
type persistEntry struct {
	key   string
	bytes int64
	mod   time.Time
}

// entries lists the saved turns, the most recent first.
func (p *kvPersist) entries() []persistEntry {
	names, _ := filepath.Glob(filepath.Join(p.dir, "*.turn"))
	var out []persistEntry
	for _, name := range names {
		key := strings.TrimSuffix(filepath.Base(name), ".turn")
		st, err := os.Stat(name)
		if err != nil {
			continue
		}
		e := persistEntry{key: key, bytes: st.Size(), mod: st.ModTime()}
		if kst, err := os.Stat(filepath.Join(p.dir, key+".kv")); err == nil {
			e.bytes += kst.Size()
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b persistEntry) int { return b.mod.Compare(a.mod) })
	return out
}

// prune deletes the least recently saved turns past the size bound and past maxTurns.
func (p *kvPersist) prune() {
	var total int64
	for i, e := range p.entries() {
		total += e.bytes
		if i > 0 && (total > p.max || i >= maxTurns) {
			os.Remove(filepath.Join(p.dir, e.key+".turn"))
			os.Remove(filepath.Join(p.dir, e.key+".kv"))
		}
	}
}

// restore loads the saved turns into turns (oldest first, so the newest is matched first) and
// the snapshots of the most recent keep of them into the runner's pool.
func (p *kvPersist) restore(r *runner.Runner, turns *turnLog, keep int) (loadedTurns, loadedKV int) {
	es := p.entries()
	es = es[:min(len(es), maxTurns)]
	for i := len(es) - 1; i >= 0; i-- {
		e := es[i]
		name := filepath.Join(p.dir, e.key+".turn")
		var tf turnFile
		b, err := os.ReadFile(name)
		if err == nil && len(b) > maxTurnFile {
			err = errors.New("too large")
		}
		if err == nil {
			err = json.Unmarshal(b, &tf)
		}
		if err != nil || tf.Prompt == "" {
			p.log.Warn("saved chat turn unreadable; dropped", "file", name, "err", err)
			os.Remove(name)
			os.Remove(filepath.Join(p.dir, e.key+".kv"))
			continue
		}
		turns.add(turn{layout: tf.Layout, prompt: tf.Prompt, promptTokens: tf.PromptTokens, reply: tf.Reply, replyTokens: tf.ReplyTokens})
		loadedTurns++
		if i >= keep {
			continue
		}
		kvPath := filepath.Join(p.dir, e.key+".kv")
		_, _, err = r.LoadSnapshot(kvPath, p.id)
		switch {
		case err == nil:
			loadedKV++
		case errors.Is(err, fs.ErrNotExist):
		case kvcache.IsSnapshotError(err):
			p.log.Warn("KV snapshot not loaded; the conversation starts clean", "file", kvPath, "err", err)
			os.Remove(kvPath)
		default:
			p.log.Warn("KV snapshot not loaded", "file", kvPath, "err", err)
		}
	}
	return loadedTurns, loadedKV
}

// persistDirs makes DataDir's folders.
func persistDirs(dataDir string) (sessions string, err error) {
	sessions = filepath.Join(dataDir, "sessions")
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		return "", fmt.Errorf("server: --data %s: %w", dataDir, err)
	}
	return sessions, nil
}
