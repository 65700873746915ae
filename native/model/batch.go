package model

import (
	"errors"
	"fmt"

	"github.com/kvlab/kvlab/native/kvcache"
)

// SeqStep is one sequence's share of a batched forward pass (ForwardBatch): Tokens run at
// positions Cache.Len()… and Logits receives Forward's rows (none, the last token's, or one per
// token, by its length).
type SeqStep struct {
	Cache  *kvcache.Cache
	Tokens []int32
	Logits []float32
}

// ForwardBatch runs several sequences' tokens through the model in one pass: every matrix
// product goes over the rows of all of them together (each weight read once for the batch),
// RoPE at each token's own position, attention per sequence over its own cache (a sequence of
// one token decodes through the cache's decode readers, longer ones prefill causally). Each
// step has Forward's contract for its own cache and logits. The inputs are checked before any
// work; on an error every cache is left as it was.
//
// The pass is batch-invariant: every product runs through wkern's invariant kernels (each
// output the same operations in the same order for any number of tokens and any split of the
// rows: register blocks of rows × tokens sharing each weight load), so a step's cells and
// logits are bit for bit those of the same step run alone through ForwardBatch, whoever shares
// the pass. They differ from Forward's (MatVec's row dots, the blocked GEMM's prefill) by
// float32 rounding only.
func (m *Model) ForwardBatch(steps []SeqStep) error {
	if len(steps) == 0 {
		return errors.New("model: a batched pass of no sequences")
	}
	hp := m.Hparams
	all := false
	total := 0
	b := m.cpu()
	defer func() { b.invariant = false; m.putCPU(b) }()
	for i, st := range steps {
		n := len(st.Tokens)
		if n == 0 {
			return fmt.Errorf("model: sequence %d of the batch has no tokens", i)
		}
		if st.Cache == nil {
			return fmt.Errorf("model: sequence %d of the batch has no cache", i)
		}
		if err := m.checkStep(b, st.Cache, st.Tokens, st.Logits); err != nil {
			return fmt.Errorf("%w (sequence %d of the batch)", err, i)
		}
		for _, o := range steps[:i] {
			if o.Cache == st.Cache {
				return fmt.Errorf("model: sequence %d of the batch shares its cache with another", i)
			}
		}
		if len(st.Logits) == n*hp.Vocab && n > 1 {
			all = true
		}
		total += n
	}
	b.invariant = true
	bt := &b.multi
	bt.Tokens, bt.Pos, bt.Seq, bt.Caches = bt.Tokens[:0], bt.Pos[:0], bt.Seq[:0], bt.Caches[:0]
	for i, st := range steps {
		p0 := st.Cache.Len()
		bt.Tokens = append(bt.Tokens, st.Tokens...)
		for j := range st.Tokens {
			bt.Pos = append(bt.Pos, int32(p0+j))
			bt.Seq = append(bt.Seq, int32(i))
		}
		bt.Caches = append(bt.Caches, st.Cache)
	}
	// The pass's logits: a row per token when any step wants them all, else a row per
	// sequence (its last token); copied out to each step.
	rows := len(steps)
	if all {
		rows = total
	}
	if need := rows * hp.Vocab; cap(b.out) < need {
		b.out = make([]float32, need)
	}
	bt.Out, bt.All = b.out[:rows*hp.Vocab], all
	err := m.pass(b, bt)
	clear(bt.Caches)
	if err != nil {
		for _, st := range steps {
			st.Cache.Truncate(st.Cache.Len())
		}
		return err
	}
	row := 0
	for i, st := range steps {
		n := len(st.Tokens)
		switch {
		case all && len(st.Logits) == n*hp.Vocab:
			copy(st.Logits, bt.Out[row*hp.Vocab:(row+n)*hp.Vocab])
		case all && len(st.Logits) > 0:
			copy(st.Logits, bt.Out[(row+n-1)*hp.Vocab:(row+n)*hp.Vocab])
		case len(st.Logits) > 0:
			copy(st.Logits, bt.Out[i*hp.Vocab:(i+1)*hp.Vocab])
		}
		row += n
	}
	return nil
}
