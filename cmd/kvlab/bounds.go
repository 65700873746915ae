package main

import (
	"fmt"

	"github.com/kvlab/kvlab/internal/limits"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/lab"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/server"
)

// The CLI's calls into the shared validation layer (internal/limits): every number a flag
// gives is bounded before the model is read, and every cache checked against the host's free
// memory before it is made, so a wrong flag is a one-line error instead of a crash.

// checkRunFlags bounds run's flags that need no model.
func checkRunFlags(o runOptions) error {
	if err := limits.ModelPath(o.model); err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	if err := limits.Int("--n", int64(o.n), 1, limits.MaxCtx, ""); err != nil {
		return err
	}
	if o.ctx != 0 {
		if err := limits.Ctx("--ctx", o.ctx); err != nil {
			return err
		}
	}
	if err := limits.Threads("--threads", o.threads); err != nil {
		return err
	}
	if err := limits.Int("--kv-window", int64(o.window), 0, limits.MaxCtx, ""); err != nil {
		return err
	}
	if err := limits.Int("--kv-sink", int64(o.sinks), 0, limits.MaxCtx, ""); err != nil {
		return err
	}
	if err := limits.Int("--kv-recent", int64(o.recent), 0, limits.MaxCtx, ""); err != nil {
		return err
	}
	if err := limits.Float("--k-gain", float64(o.kGain), 1e-3, limits.MaxKGain, ""); err != nil {
		return err
	}
	s := o.sampler
	if err := limits.Float("--temp", float64(s.Temp), 0, 1e3, ""); err != nil {
		return err
	}
	if err := limits.Float("--top-p", float64(s.TopP), 0, 1, ""); err != nil {
		return err
	}
	if err := limits.Float("--min-p", float64(s.MinP), 0, 1, ""); err != nil {
		return err
	}
	return limits.Int("--top-k", int64(s.TopK), 0, limits.MaxTopK, "")
}

// checkRunCache bounds the overlay by the context (the run's, or the model's trained one when
// longer) and checks the cache against the host's free memory, before it is made.
func checkRunCache(cfg kvcache.Config, trained int) error {
	if err := limits.Overlay("--kv-window", cfg.Window, "--kv-sink", cfg.Sinks, max(cfg.MaxCells, trained)); err != nil {
		return err
	}
	return hostFits(fmt.Sprintf("a KV cache of %d cells in %s", cfg.MaxCells, cfg.Pair), kvcache.EstimateBytes(cfg))
}

// hostFits checks need bytes against the host's available memory (when it can be read), less
// the compute reserve the serve policy keeps.
func hostFits(what string, need int64) error {
	mem, err := server.HostMemory()
	if err != nil {
		return nil
	}
	avail := max(mem.FreeBytes-calc.DefaultReserveBytes, 1)
	return limits.Memory(what, need, avail, mem.Source+" less a "+limits.Bytes(calc.DefaultReserveBytes)+" reserve")
}

// checkABFlags bounds ab's flags and arms that need no model.
func checkABFlags(o *abOptions, arms []lab.Arm) error {
	if err := limits.ModelPath(o.Model); err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	if o.Ctx != 0 {
		if err := limits.Ctx("--ctx", o.Ctx); err != nil {
			return err
		}
	}
	if err := limits.Int("--n", int64(o.N), 0, limits.MaxCtx, ""); err != nil {
		return err
	}
	if err := limits.Threads("--threads", o.Threads); err != nil {
		return err
	}
	if err := limits.Int("--needle-trials", int64(o.NeedleTrials), 0, 1000, ""); err != nil {
		return err
	}
	if err := limits.Int("--arms", int64(len(arms)), 1, 64, "arms per run"); err != nil {
		return err
	}
	return nil
}

// checkABCache checks an A/B's caches (the f16 reference, the determinism run's and one per
// arm, at ctx cells) against the context and the host's free memory.
func checkABCache(geo kvcache.Config, arms []lab.Arm, ctx int) error {
	geo.MaxCells = ctx
	need := 2 * kvcache.EstimateBytes(geo)
	for _, a := range arms {
		if err := limits.Overlay("window", a.Window, "sinks", a.Sinks, ctx); err != nil {
			return fmt.Errorf("--arms: %s: %w", a, err)
		}
		c := geo
		c.Pair, c.Window, c.Sinks, c.LayerPairs = a.Pair, a.Window, a.Sinks, a.LayerPairs()
		need = limits.Add(need, kvcache.EstimateBytes(c))
	}
	return hostFits(fmt.Sprintf("the A/B's %d caches of %d cells", len(arms)+2, ctx), need)
}

// runnable reports whether run would run the model at path: the same load (header, metadata
// checks, tensors, tokenizer), then closed.
func runnable(path string) error {
	m, _, err := loadModel(path, model.Options{Threads: 1})
	if err != nil {
		return err
	}
	return m.Close()
}

// finite turns non-finite logits after a successful forward pass into an error.
func finite(err error, logits []float32) error {
	if err != nil {
		return err
	}
	return model.CheckLogits(logits)
}
