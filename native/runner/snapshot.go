package runner

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"

	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/model"
)

// identitySample is how many leading bytes of each tensor ModelIdentity hashes.
const identitySample = 4096

// ModelIdentity is the identity KV snapshots of m carry: a SHA-256 of the architecture, the
// hyperparameters and every tensor's name, type, shape and first 4 KiB, and the file's name
// (base name of path) for messages. Two files with the same weights have the same identity
// whatever their names; a fine-tune of the same shape has another.
func ModelIdentity(m *model.Model, path string) kvcache.Identity {
	h := sha256.New()
	fmt.Fprintf(h, "%+v\n", m.Hparams)
	if f := m.File(); f != nil {
		for _, ti := range f.Tensors() {
			fmt.Fprintf(h, "%s %v %d\n", ti.Name, ti.Dims, ti.Type)
			if b, err := f.TensorData(ti.Name); err == nil {
				h.Write(b[:min(len(b), identitySample)])
			}
		}
	}
	var id kvcache.Identity
	copy(id.Hash[:], h.Sum(nil))
	id.Name = filepath.Base(path)
	return id
}

// TokensKey is a short hex name for a token sequence (a SHA-256 prefix), for file names.
func TokensKey(tokens []int32) string {
	h := sha256.New()
	var b [4]byte
	for _, t := range tokens {
		b[0], b[1], b[2], b[3] = byte(t), byte(t>>8), byte(t>>16), byte(t>>24)
		h.Write(b[:])
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:16])
}

// SaveSnapshot writes to path (kvcache.SaveSnapshot: atomic) the idle sequence holding the
// longest start of tokens and nothing past it: a finished generation's prompt and reply, run
// with Params.KeepLast (or all but the last token when the context filled).
func (r *Runner) SaveSnapshot(path string, id kvcache.Identity, tokens []int32) error {
	s := r.pool.takePrefix(tokens)
	if s == nil {
		return fmt.Errorf("runner: no sequence holds those %d tokens to save", len(tokens))
	}
	defer r.pool.Put(s)
	kv, ok := s.cache.(backend.KVHolder)
	if !ok {
		return fmt.Errorf("runner: %w: the %s KV cache is not in host memory", kvcache.ErrSnapshotUnsupported, r.cfg.Device)
	}
	return kvcache.SaveSnapshot(path, kv.KVCache(), id, s.tokens)
}

// LoadSnapshot loads the snapshot at path into a sequence of the pool and keeps it idle, so
// that the next generation whose prompt starts with its tokens continues from its cells. It
// returns those tokens. On any error no sequence holds anything of the file (the session starts
// clean); kvcache.IsSnapshotError tells a bad or foreign file from other failures.
func (r *Runner) LoadSnapshot(path string, id kvcache.Identity) ([]int32, kvcache.SnapshotInfo, error) {
	s, err := r.pool.getEmpty()
	if err != nil {
		return nil, kvcache.SnapshotInfo{}, err
	}
	defer r.pool.Put(s)
	kv, ok := s.cache.(backend.KVHolder)
	if !ok {
		return nil, kvcache.SnapshotInfo{}, fmt.Errorf("runner: %w: the %s KV cache is not in host memory", kvcache.ErrSnapshotUnsupported, r.cfg.Device)
	}
	toks, info, err := kvcache.LoadSnapshot(path, kv.KVCache(), id)
	if err == nil {
		for i, t := range toks {
			if t < 0 || int(t) >= r.cfg.Vocab {
				kv.KVCache().Reset()
				err = fmt.Errorf("runner: %w: token %d at cell %d is outside the vocabulary [0, %d)", kvcache.ErrSnapshotCorrupt, t, i, r.cfg.Vocab)
				break
			}
		}
	}
	if err != nil {
		s.tokens = s.tokens[:0]
		return nil, kvcache.SnapshotInfo{}, err
	}
	s.tokens = append(s.tokens[:0], toks...)
	return toks, info, nil
}

// takePrefix takes the idle sequence holding the longest start of tokens and nothing else, or
// nil.
func (p *Pool) takePrefix(tokens []int32) *Sequence {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, s := range p.idle {
		if n := len(s.tokens); n > 0 && commonPrefix(s.tokens, tokens) == n && (best < 0 || n > len(p.idle[best].tokens)) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	s := p.idle[best]
	p.idle = append(p.idle[:best], p.idle[best+1:]...)
	p.inUse++
	return s
}

// getEmpty returns an empty sequence: on a contiguous pool the least recently used idle one,
// reset, when the pool is full, else a new one (Get of no prompt); on a paged pool a new one,
// failing at once (kvcache.ErrNoPages) when the budget has no room for it.
func (p *Pool) getEmpty() (*Sequence, error) {
	if p.pages == nil {
		return p.getContiguous(nil)
	}
	s, _, err := p.tryPaged(nil, 0)
	if s == nil && err == nil {
		err = fmt.Errorf("runner: %w", kvcache.ErrNoPages)
	}
	return s, err
}
