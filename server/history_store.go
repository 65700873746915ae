package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvlab/kvlab/internal/history"
	"github.com/kvlab/kvlab/server/api"
)

// sqlRuns keeps runs in the SQLite run history `kvlab runs` reads (internal/history): a live
// A/B is stored as a lab.ABReport with its decode series (the prompt KL, perplexity, attention
// error and needles that `kvlab ab` also measures are left zero), and the texts the lab page
// shows go in the run's config.
type sqlRuns struct {
	db      *history.DB
	machine history.Machine

	mu     sync.Mutex
	hashes map[string]modelHash
}

type modelHash struct {
	sum  string
	size int64
}

// openRunStore opens the run history database at path, creating it when missing.
func openRunStore(path string) (runStore, string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, "", err
	}
	db, err := history.Open(context.Background(), path)
	if err != nil {
		return nil, "", err
	}
	return &sqlRuns{db: db, machine: history.ThisMachine(Version), hashes: map[string]modelHash{}}, "in " + path, nil
}

// Version is the kvlab build recorded with each run (cmd/kvlab sets it).
var Version = "dev"

// liveConfig is the config JSON of a run the server recorded.
type liveConfig struct {
	Source string `json:"source"` // "server"
	Mode   string `json:"mode"`
	Prompt string `json:"prompt"`
	// PromptText is the prompt's text when "prompt" holds something else (`kvlab ab` stores
	// its --prompt flag, the whole document, there).
	PromptText string   `json:"prompt_text,omitempty"`
	N          int      `json:"n"`
	Arms       armNames `json:"arms"`
	Window     int      `json:"window,omitempty"`
	Sinks      int      `json:"sinks,omitempty"`
	KGain      float32  `json:"k_gain,omitempty"`
	Stopped    bool     `json:"stopped,omitempty"`
	Text       string   `json:"text,omitempty"`
	RefText    string   `json:"ref_text,omitempty"`
	ArmTexts   []string `json:"arm_texts,omitempty"`
}

// armNames are a run's arms: an array, or one comma-separated string as `kvlab ab` stores its
// --arms flag.
type armNames []string

func (a *armNames) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*a = list
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*a = strings.Split(one, ",")
	return nil
}

// hash returns a model file's SHA-256, computed once per file.
func (s *sqlRuns) hash(path string) (modelHash, error) {
	s.mu.Lock()
	h, ok := s.hashes[path]
	s.mu.Unlock()
	if ok {
		return h, nil
	}
	sum, size, err := history.HashFile(context.Background(), path)
	if err != nil {
		return h, err
	}
	h = modelHash{sum, size}
	s.mu.Lock()
	s.hashes[path] = h
	s.mu.Unlock()
	return h, nil
}

func (s *sqlRuns) add(r api.Run) (string, error) {
	if r.Report == nil {
		return "", errors.New("run history: the run has no report")
	}
	h, err := s.hash(r.ModelPath)
	if err != nil {
		return "", fmt.Errorf("run history: hashing the model: %w", err)
	}
	cfg := liveConfig{Source: "server", Mode: r.Mode, Prompt: r.Prompt, N: r.N, Window: r.Window, Sinks: r.Sinks,
		KGain: r.KGain, Stopped: r.Stopped, Text: r.Text, RefText: r.RefText}
	for _, a := range r.Arms {
		cfg.Arms = append(cfg.Arms, a.Name)
		cfg.ArmTexts = append(cfg.ArmTexts, a.Text)
	}
	cj, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	started, err := time.Parse(time.RFC3339Nano, r.Created)
	if err != nil {
		started = time.Now()
	}
	id, err := s.db.Save(context.Background(), &history.Run{Kind: "ab", Started: started,
		Model:   history.ModelRef{Path: r.ModelPath, Name: r.Model, SHA256: h.sum, Bytes: h.size},
		Machine: s.machine, Config: cj, Report: r.Report})
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(id, 10), nil
}

func (s *sqlRuns) list(limit int) ([]api.Run, error) {
	sums, err := s.db.List(context.Background(), history.ListOptions{Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]api.Run, 0, len(sums))
	for _, sm := range sums {
		r, err := s.get(strconv.FormatInt(sm.ID, 10))
		if err != nil {
			// A run whose report no longer reads is listed by its summary.
			r = api.Run{ID: strconv.FormatInt(sm.ID, 10), Created: sm.Started.UTC().Format(time.RFC3339), Kind: sm.Kind,
				Status: string(sm.Status), Error: err.Error(), Model: sm.Model}
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *sqlRuns) get(id string) (api.Run, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return api.Run{}, fmt.Errorf("run %q: %w", id, ErrNoRun)
	}
	hr, err := s.db.Get(context.Background(), n)
	if errors.Is(err, history.ErrNotFound) {
		return api.Run{}, fmt.Errorf("run %s: %w", id, ErrNoRun)
	}
	if err != nil {
		return api.Run{}, err
	}
	return fromHistory(hr), nil
}

func (s *sqlRuns) close() error { return s.db.Close() }

// fromHistory turns a stored run (the server's or `kvlab ab`'s) into the API's shape.
func fromHistory(hr *history.Run) api.Run {
	r := api.Run{ID: strconv.FormatInt(hr.ID, 10), Created: hr.Started.UTC().Format(time.RFC3339), Kind: hr.Kind,
		Status: string(hr.Status), Error: hr.Error, Source: "cli", Model: hr.Model.Name, ModelPath: hr.Model.Path, KVFormats: hr.KVFormats,
		Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", hr.Machine.OS, hr.Machine.Arch, hr.Machine.CPUs, hr.Machine.CPU)}
	if r.Model == "" {
		r.Model = filepath.Base(hr.Model.Path)
	}
	// One name form everywhere: the file's name without .gguf, as the server names models.
	r.Model = strings.TrimSuffix(r.Model, ".gguf")
	var cfg liveConfig
	if json.Unmarshal(hr.Config, &cfg) == nil && cfg.Source != "" {
		r.Source, r.Mode, r.Prompt, r.Stopped, r.Text, r.RefText = cfg.Source, cfg.Mode, cfg.Prompt, cfg.Stopped, cfg.Text, cfg.RefText
		if cfg.PromptText != "" {
			r.Prompt = cfg.PromptText
		}
		r.Window, r.Sinks, r.KGain = cfg.Window, cfg.Sinks, cfg.KGain
	}
	rep := hr.Report
	if rep == nil {
		return r
	}
	r.Report = rep
	r.PromptTokens, r.N = rep.Settings.PromptTokens, rep.Settings.N
	for i, a := range rep.Arms {
		ra := api.RunArm{Name: a.Arm, MeanKL: a.Decode.KLMean, P99KL: a.Decode.KLP99, MaxKL: a.Decode.KLMax, Top1: a.Decode.Top1,
			PrefillTPS: a.PrefillTPS, DecodeTPS: a.DecodeTPS, KVBytes: a.KVBytes, BytesPerToken: a.BytesPerToken, KL: a.Decode.KL,
			PromptKL: a.Prompt.KLMean, PPL: a.PPL, AttnErrMean: a.AttnErrMean, NeedleOK: a.Needle.OK, NeedleTotal: a.Needle.Total}
		if i < len(cfg.ArmTexts) {
			ra.Text = cfg.ArmTexts[i]
		}
		r.Tokens = max(r.Tokens, a.Decode.Positions)
		r.Arms = append(r.Arms, ra)
	}
	return r
}
