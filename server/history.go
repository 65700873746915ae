package server

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kvlab/kvlab/server/api"
)

// ErrNoRun is returned for a run id the history does not have.
var ErrNoRun = errors.New("no such run")

// runHistory is the run history the lab's A/B runs land in and /runs shows.
type runHistory struct {
	store runStore
	where string
}

// runStore keeps runs.
type runStore interface {
	add(api.Run) (string, error)
	list(limit int) ([]api.Run, error)
	get(id string) (api.Run, error)
	close() error
}

// openHistory opens the run history database at path (empty: runs are kept in memory for the
// server's life).
func openHistory(path string) (*runHistory, error) {
	if path == "" {
		return &runHistory{store: &memRuns{}, where: "in memory (no database)"}, nil
	}
	st, where, err := openRunStore(path)
	if err != nil {
		return nil, err
	}
	return &runHistory{store: st, where: where}, nil
}

func (h *runHistory) describe() string { return h.where }

func (h *runHistory) close() error { return h.store.close() }

// memRuns keeps runs in memory, newest last, at most maxMemRuns.
type memRuns struct {
	mu   sync.Mutex
	runs []api.Run
	next int
}

const maxMemRuns = 1000

func (m *memRuns) add(r api.Run) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	r.ID = strconv.Itoa(m.next)
	if r.Created == "" {
		r.Created = time.Now().UTC().Format(time.RFC3339)
	}
	m.runs = append(m.runs, r)
	if len(m.runs) > maxMemRuns {
		m.runs = m.runs[len(m.runs)-maxMemRuns:]
	}
	return r.ID, nil
}

func (m *memRuns) list(limit int) ([]api.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.runs)
	slices.Reverse(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *memRuns) get(id string) (api.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.runs {
		if r.ID == id {
			return r, nil
		}
	}
	return api.Run{}, fmt.Errorf("run %s: %w", id, ErrNoRun)
}

func (m *memRuns) close() error { return nil }
