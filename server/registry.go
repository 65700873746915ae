package server

import (
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kvlab/kvlab/internal/discover"
	"github.com/kvlab/kvlab/native/model"
)

// registry holds the models the server can serve, loading each on first use (or at start for
// the ones given with --model) and keeping it loaded.
type registry struct {
	cfg      *Config
	sessions int
	metrics  *metrics
	log      *slog.Logger

	mu      sync.Mutex
	entries []*entry
	closed  bool
}

// entry is one model: found on disk, then loaded (or failed to load).
type entry struct {
	info discover.Model
	once sync.Once
	eng  *Engine
	err  error
}

// unknownModelError names a model the server does not have.
type unknownModelError struct {
	name  string
	known []string
}

func (e *unknownModelError) Error() string {
	if len(e.known) == 0 {
		return fmt.Sprintf("model %q not found: the server has no models (start it with --model FILE.gguf)", e.name)
	}
	return fmt.Sprintf("model %q not found; the server has %s", e.name, strings.Join(e.known, ", "))
}

func newRegistry(cfg *Config, sessions int, m *metrics, log *slog.Logger) *registry {
	r := &registry{cfg: cfg, sessions: sessions, metrics: m, log: log}
	for _, info := range cfg.Models {
		r.entries = append(r.entries, &entry{info: info})
	}
	return r
}

// list returns the models, in configuration order.
func (r *registry) list() []discover.Model {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]discover.Model, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.info
	}
	return out
}

// names lists the model names.
func (r *registry) names() []string {
	var out []string
	for _, m := range r.list() {
		out = append(out, m.Name)
	}
	return out
}

// supported reports whether the engine runs a model's architecture.
func supported(m discover.Model) bool { return slices.Contains(model.Archs(), m.Arch) }

// find returns the entry of a model by name; an empty name means the first model the engine can
// run.
func (r *registry) find(name string) (*entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		if (name == "" && supported(e.info)) || e.info.Name == name {
			return e, nil
		}
	}
	known := make([]string, 0, len(r.entries))
	for _, e := range r.entries {
		known = append(known, e.info.Name)
	}
	return nil, &apiError{Status: 404, Type: typeNotFound, Code: "model_not_found", Param: "model",
		Message: (&unknownModelError{name: name, known: known}).Error()}
}

// get returns the engine of a model, loading it on first use.
func (r *registry) get(name string) (*Engine, error) {
	e, err := r.find(name)
	if err != nil {
		return nil, err
	}
	e.once.Do(func() {
		r.mu.Lock()
		closed := r.closed
		r.mu.Unlock()
		if closed {
			r.mu.Lock()
			e.err = ErrDraining
			r.mu.Unlock()
			return
		}
		if !supported(e.info) {
			r.mu.Lock()
			defer r.mu.Unlock()
			e.err = fmt.Errorf("model %s: architecture %q is not supported (kvlab runs %s)", e.info.Name, e.info.Arch, strings.Join(model.Archs(), ", "))
			return
		}
		eng, err := loadEngine(e.info, r.cfg, r.sessions, r.metrics, r.log)
		if err != nil {
			r.log.Error("loading a model failed", "model", e.info.Name, "err", err)
		}
		r.mu.Lock()
		e.eng, e.err = eng, err
		r.mu.Unlock()
	})
	if e.err != nil {
		return nil, &apiError{Status: 500, Type: typeServer, Code: "model_load_failed", Message: e.err.Error()}
	}
	return e.eng, nil
}

// loaded returns the engines loaded so far, by name.
func (r *registry) loaded() []*Engine {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Engine
	for _, e := range r.entries {
		if e.eng != nil {
			out = append(out, e.eng)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Info.Name < out[j].Info.Name })
	return out
}

// status is a model's state for the pages and /api/models.
func (r *registry) status(name string) (loaded bool, err error) {
	e, ferr := r.find(name)
	if ferr != nil {
		return false, ferr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return e.eng != nil, e.err
}

// close releases every loaded model; later loads fail.
func (r *registry) close() {
	r.mu.Lock()
	r.closed = true
	entries := slices.Clone(r.entries)
	r.mu.Unlock()
	for _, e := range entries {
		e.once.Do(func() { e.err = ErrDraining })
		if e.eng != nil {
			e.eng.Close()
		}
	}
}
