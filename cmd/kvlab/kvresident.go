package main

import (
	"errors"
	"fmt"

	"github.com/kvlab/kvlab/internal/limits"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/server"
)

// --kv-resident (run and serve): the CUDA cache's host-spill tail (native/cuda/engine/spill.go).
// A cache keeps its first N cells in device memory and the cells past them in pinned host
// memory, copied to the device at every decode step. Nothing spills unless asked: a context
// whose all-device cache does not fit the card's free memory is refused with an error that
// names the flag and a value that fits, since a tail costs every host cell's bytes over the
// host link at every token.

// kvResidentUsage is the flag's one-line help.
const kvResidentUsage = "--device cuda: keep the first `N` cells of each KV cache on the GPU and the cells past them in pinned host memory, streamed to the GPU every token (a host-spill tail); 0 keeps every cell on the GPU"

// kvResidentHelp is the paragraph of run's and serve's --help on the tail.
var kvResidentHelp = fmt.Sprintf(`--kv-resident N (with --device cuda) keeps the first N cells of each KV cache in GPU memory
(rounded up to 32) and the cells past them in pinned host memory: a host-spill tail, cut into
chunks of 1024 cells, one chunk per layer on the GPU. Every decode step copies each host chunk
to the GPU and attends to it with the same kernels, and the partial results merge exactly, so
only the float32 summation order differs from an all-GPU cache; prompt tokens past the GPU's
cells run one at a time ('kvlab bench spill' measures the cost). Nothing spills unless asked:
a cache that does not fit the GPU's free memory is refused with an error that names the
largest --kv-resident whose GPU part fits beside the weights and a %s reserve. The tail
takes no FP16 overlay (--kv-window, --kv-sink), no --kv-recent and no model with
sliding-window layers (Gemma 2 and 3).`, limits.Bytes(calc.DefaultReserveBytes))

// spillChunk is the tail's chunk in cells (0: engine.DefaultSpillChunk); tests set it small
// so that a short run moves chunks to host memory.
var spillChunk = 0

// checkKVResident refuses --kv-resident where there is no tail to keep, before a model is
// loaded: out of range, off the GPU, with the FP16 overlay or the f16 recent window
// (server.CheckKVResident).
func checkKVResident(resident int, device string, window, sinks, recent int) error {
	if resident < 0 || resident > limits.MaxCtx {
		return fmt.Errorf("--kv-resident %d: want 0 (every cell on the GPU) to %d cells", resident, limits.MaxCtx)
	}
	return server.CheckKVResident(resident, device, kvcache.Config{Window: window, Sinks: sinks, Recent: recent}, "")
}

// checkKVResidentModel refuses a tail on a model with sliding-window layers (the engine's
// tail attends to the whole context), by server.CheckKVResident on the model's cache
// configuration.
func checkKVResidentModel(resident int, cfg kvcache.Config, name string) error {
	return server.CheckKVResident(resident, "cuda", cfg, name)
}

// deviceKVCells is the cells of cfg's cache that a tail past resident cells (0: none) keeps
// in device memory: the resident ones and one chunk per layer (engine.SpillOptions.DeviceCells).
func deviceKVCells(cfg kvcache.Config, resident, chunk int) int {
	return engine.SpillOptions{Resident: resident, Chunk: chunk}.DeviceCells(cfg.MaxCells)
}

// hasTail is whether a cache of cfg with --kv-resident resident has a host-spill tail.
func hasTail(cfg kvcache.Config, resident int) bool {
	return engine.SpillOptions{Resident: resident}.HasTail(cfg.MaxCells)
}

// kvBytesAt is the estimated memory of cfg's cache at cells cells.
func kvBytesAt(cfg kvcache.Config, cells int) int64 {
	cfg.MaxCells = cells
	return kvcache.EstimateBytes(cfg)
}

// deviceKVFit checks the device part of a CUDA cache of cfg (a tail past resident cells
// when positive) against the card's free memory after the weights. A cache that cannot fit
// is refused before it is allocated, with the --kv-resident value that fits (free less the
// compute reserve the serve policy keeps).
func deviceKVFit(cfg kvcache.Config, resident, chunk int, free int64, source string) error {
	cells := deviceKVCells(cfg, resident, chunk)
	need := kvBytesAt(cfg, cells)
	if need <= free {
		return nil
	}
	fits := engine.ResidentThatFits(cfg, chunk, 1, free-calc.DefaultReserveBytes)
	var what string
	if hasTail(cfg, resident) {
		what = fmt.Sprintf("--kv-resident %d: the GPU part of the KV cache (%d cells in %s, one spill chunk per layer included) needs %s, more than the %s free after the weights (%s)",
			resident, cells, cfg.Pair, limits.Bytes(need), limits.Bytes(free), source)
	} else {
		what = fmt.Sprintf("--device cuda: a KV cache of %d cells in %s needs %s, more than the %s free on the GPU after the weights (%s)",
			cfg.MaxCells, cfg.Pair, limits.Bytes(need), limits.Bytes(free), source)
	}
	if fits == 0 {
		return fmt.Errorf("%s, and not even a host-spill tail's GPU part fits: lower --ctx or pick a smaller --kv format", what)
	}
	if resident > 0 {
		return fmt.Errorf("%s: lower it (--kv-resident %d fits, leaving a %s reserve)", what, fits, limits.Bytes(calc.DefaultReserveBytes))
	}
	return fmt.Errorf("%s: keep the cells past a budget in pinned host memory with --kv-resident N (%d fits, leaving a %s reserve), or lower --ctx or pick a smaller --kv format",
		what, fits, limits.Bytes(calc.DefaultReserveBytes))
}

// oomHint adds to err, when it is the GPU running out of memory and no tail was asked for,
// that --kv-resident keeps part of the cache in host memory.
func oomHint(err error, resident int) error {
	if err != nil && resident == 0 && errors.Is(err, cuda.ErrOutOfMemory) {
		return fmt.Errorf("%w (--kv-resident N keeps only the first N cells of the KV cache on the GPU, the rest in host memory)", err)
	}
	return err
}
