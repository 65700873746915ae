package model

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/gguf"
)

// Keys of the tokenizer's special ids (native/tokenizer reads them; they are checked here, at
// load, against the vocabulary so that a bad id is an error instead of a silent default).
var specialIDKeys = []string{
	"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
	"tokenizer.ggml.eom_token_id", "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
	"tokenizer.ggml.sep_token_id", "tokenizer.ggml.cls_token_id", "tokenizer.ggml.mask_token_id",
}

// CheckMetadata validates a model's metadata like input, in one place, before anything runs:
// values that are present but unusable are errors naming their GGUF key, instead of being
// replaced by defaults. It checks the special-token ids against the vocabulary, the RoPE base
// and scale and the RMS epsilon (finite and positive), and the head counts (consistent with
// each other and the embedding). New calls it; `kvlab inspect` reports it.
func CheckMetadata(f *gguf.File, hp Hparams) error {
	key := func(k string) string { return hp.Arch + "." + k }
	for _, k := range []string{"attention.layer_norm_rms_epsilon", "rope.freq_base"} {
		if err := positiveFinite(f, key(k)); err != nil {
			return err
		}
	}
	if t, _ := f.String(key("rope.scaling.type")); t == "linear" {
		if err := positiveFinite(f, key("rope.scaling.factor")); err != nil {
			return err
		}
	}
	if v, ok := f.Value(key("attention.head_count_kv")); ok {
		n, isInt := f.Int(key("attention.head_count_kv"))
		if !isInt || n < 1 || int(n) > hp.Heads {
			return fmt.Errorf("model: %s = %v: want 1 to attention.head_count (%d)", key("attention.head_count_kv"), clipValue(v), hp.Heads)
		}
	}
	if hp.Heads > hp.Embd {
		return fmt.Errorf("model: %s = %d is more than %s (%d)", key("attention.head_count"), hp.Heads, key("embedding_length"), hp.Embd)
	}
	if _, ok := f.Value(key("attention.key_length")); !ok && hp.Embd%hp.Heads != 0 {
		return fmt.Errorf("model: %s %d is not a multiple of %s %d (and %s is absent)", key("embedding_length"), hp.Embd,
			key("attention.head_count"), hp.Heads, key("attention.key_length"))
	}
	vocab := hp.Vocab
	if toks, ok := f.Strings("tokenizer.ggml.tokens"); ok {
		vocab = len(toks)
	}
	if vocab <= 0 {
		return nil
	}
	for _, k := range specialIDKeys {
		v, ok := f.Value(k)
		if !ok {
			continue
		}
		n, isInt := f.Int(k)
		if isInt && (n == -1 || n == math.MaxUint32) && k != specialIDKeys[0] && k != specialIDKeys[1] {
			continue // llama.cpp's "no such token", written by converters for pad and the like
		}
		if !isInt || n < 0 || n >= int64(vocab) {
			return fmt.Errorf("model: %s = %v is not a token id of the vocabulary of %d", k, clipValue(v), vocab)
		}
	}
	return nil
}

// positiveFinite checks that key, when present, is a finite number > 0.
func positiveFinite(f *gguf.File, key string) error {
	v, ok := f.Value(key)
	if !ok {
		return nil
	}
	x, isNum := f.Float(key)
	if !isNum || math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		return fmt.Errorf("model: %s = %v: want a finite number > 0", key, clipValue(v))
	}
	return nil
}

// clipValue bounds a metadata value quoted in an error.
func clipValue(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return s
}

// ErrNonFinite is returned when a forward pass produces NaN or infinite logits (non-finite
// weights, or an overflow): an error instead of an empty answer.
var ErrNonFinite = fmt.Errorf("model: the forward pass produced non-finite logits (NaN or infinite weights?)")

// CheckLogits reports ErrNonFinite when logits hold a NaN or an infinity.
func CheckLogits(logits []float32) error {
	for _, x := range logits {
		if x-x != 0 { // NaN or ±Inf
			return ErrNonFinite
		}
	}
	return nil
}
