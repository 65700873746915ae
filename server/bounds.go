package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/kvlab/kvlab/internal/limits"
	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/lab"
	"github.com/kvlab/kvlab/native/model"
)

// The server's calls into the shared validation layer (internal/limits): every bound a request
// meets besides its shape, checked before anything is allocated.

// limitsError maps the validation layer's errors to the API's: a value out of range is a 400
// naming the field, a cache past the memory budget a 400 saying how much it needs.
func limitsError(err error) *apiError {
	var re *limits.Error
	if errors.As(err, &re) {
		return &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Code: "out_of_range", Param: re.Field, Message: err.Error()}
	}
	var me *limits.MemoryError
	if errors.As(err, &me) {
		return &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Code: "insufficient_memory", Message: err.Error()}
	}
	return nil
}

// checkConfigBounds bounds the configuration's numbers (the serve flags).
func checkConfigBounds(cfg *Config) error {
	if cfg.Ctx != 0 {
		if err := limits.Ctx("--ctx", cfg.Ctx); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	if err := limits.Threads("--threads", cfg.Threads); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := limits.Int("--max-concurrent", int64(cfg.MaxConcurrent), 0, 1024, ""); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := limits.Int("--batch", int64(cfg.Batch), 0, 1024, ""); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if cfg.BatchGather > time.Second {
		return fmt.Errorf("server: %w", &limits.Error{Field: "--batch-gather", Value: cfg.BatchGather.String(), Min: "0s", Max: "1s"})
	}
	if err := limits.Int("--max-queue", int64(cfg.MaxQueue), -1, 1<<16, ""); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// checkArmBounds bounds each arm's FP16 overlay by the model's context.
func checkArmBounds(arms []lab.Arm, ctx int) error {
	for _, a := range arms {
		if err := limits.Overlay("window", a.Window, "sinks", a.Sinks, ctx); err != nil {
			return badRequest("arms", "arms: %s: %v", a.String(), err)
		}
		if err := limits.Int("recent window", int64(a.Recent), 0, int64(ctx), "the context"); err != nil {
			return badRequest("arms", "arms: %s: %v", a.String(), err)
		}
	}
	return nil
}

// checkABMemory checks the caches an A/B makes (the f16 reference, one per arm, and the
// determinism run's) against the free memory, before any is made.
func (s *Server) checkABMemory(p abPlan, ctx int) error {
	geo := p.eng.Model.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, ctx)
	need := 2 * kvcache.EstimateBytes(geo)
	for _, a := range p.arms {
		c := geo
		c.Pair, c.Window, c.Recent, c.Sinks, c.LayerPairs = a.Pair, a.Window, a.Recent, a.Sinks, a.LayerPairs()
		need = limits.Add(need, kvcache.EstimateBytes(c))
	}
	mem, err := s.cfg.Memory()
	if err != nil {
		return nil // unknown: the bounds on every field still hold
	}
	if err := limits.Memory(fmt.Sprintf("the A/B's %d caches of %d cells", len(p.arms)+2, ctx), need, mem.FreeBytes, mem.Source); err != nil {
		return limitsError(err)
	}
	return nil
}

// checkCacheBudget checks, at load, that the engine's caches (one per concurrent generation)
// fit in the free memory before the first is made.
func checkCacheBudget(ccfg kvcache.Config, sessions int, mem MemInfo, memErr error) error {
	if memErr != nil {
		return nil
	}
	need := limits.Mul(kvcache.EstimateBytes(ccfg), int64(max(sessions, 1)))
	what := fmt.Sprintf("%d KV caches of %d cells in %s", max(sessions, 1), ccfg.MaxCells, ccfg.Pair)
	return limits.Memory(what, need, mem.FreeBytes, mem.Source)
}

// checkSamplingBounds bounds the sampling fields a request may set.
func checkSamplingBounds(f samplingFields) error {
	if f.TopK != nil {
		if err := limits.Int("top_k", int64(*f.TopK), 0, limits.MaxTopK, ""); err != nil {
			return limitsError(err)
		}
	}
	return nil
}

// checkMaxTokensBound bounds max_tokens from above (the context bounds it further, at run).
func checkMaxTokensBound(name string, n int) error {
	if err := limits.Int(name, int64(n), 1, limits.MaxCtx, ""); err != nil {
		return limitsError(err)
	}
	return nil
}

// finiteBatch is finiteForward for the batched pass: every step's logits.
func finiteBatch(f backend.BatchForwardFunc) backend.BatchForwardFunc {
	return func(steps []model.SeqStep) error {
		if err := f(steps); err != nil {
			return err
		}
		for _, st := range steps {
			if err := model.CheckLogits(st.Logits); err != nil {
				return err
			}
		}
		return nil
	}
}

// finiteForward reports non-finite logits (NaN weights) as an error of the forward pass, so a
// reply fails instead of coming back empty.
func finiteForward(f ForwardFunc) ForwardFunc {
	return func(tokens []int32, cache *kvcache.Cache, logits []float32) error {
		if err := f(tokens, cache, logits); err != nil {
			return err
		}
		return model.CheckLogits(logits)
	}
}
