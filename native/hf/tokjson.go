package hf

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// maxVocab bounds the token count of a tokenizer.json.
const maxVocab = 1 << 22

// tokenizerJSON is the part of a Hugging Face tokenizer.json that becomes GGUF tokenizer
// metadata.
type tokenizerJSON struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         struct {
		Type         string          `json:"type"`
		Vocab        json.RawMessage `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		ByteFallback bool            `json:"byte_fallback"`
		UnkToken     *string         `json:"unk_token"`
		IgnoreMerges bool            `json:"ignore_merges"`
	} `json:"model"`
}

// tokenizerConfig is the part of tokenizer_config.json read: the special tokens, whether BOS
// and EOS are added, and the chat template.
type tokenizerConfig struct {
	AddBOS       *bool           `json:"add_bos_token"`
	AddEOS       *bool           `json:"add_eos_token"`
	BOS          json.RawMessage `json:"bos_token"`
	EOS          json.RawMessage `json:"eos_token"`
	PAD          json.RawMessage `json:"pad_token"`
	UNK          json.RawMessage `json:"unk_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

// tokenText reads a special token given as a string or as {"content": …}.
func tokenText(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s != ""
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Content, o.Content != ""
	}
	return "", false
}

// firstID reads config.json's bos_token_id / eos_token_id: an integer or a list of them.
func firstID(raw json.RawMessage) (int, bool) {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n, true
	}
	var l []int
	if json.Unmarshal(raw, &l) == nil && len(l) > 0 {
		return l[0], true
	}
	return 0, false
}

// Known pre-tokenizer patterns (the Split regex of tokenizer.json) and the tokenizer.ggml.pre
// name llama.cpp gives them.
const (
	patGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	patLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// component is one normalizer, pre-tokenizer or decoder step (a Sequence is flattened).
type component struct {
	Type          string          `json:"type"`
	Prepend       string          `json:"prepend"`
	Pattern       json.RawMessage `json:"pattern"`
	Content       string          `json:"content"`
	UseRegex      *bool           `json:"use_regex"`
	AddPrefix     *bool           `json:"add_prefix_space"`
	PrependScheme string          `json:"prepend_scheme"`
	Replacement   string          `json:"replacement"`
}

// components flattens a (possibly Sequence) step list; depth bounds nesting.
func components(raw json.RawMessage, depth int) []component {
	if len(raw) == 0 || string(raw) == "null" || depth > 8 {
		return nil
	}
	var seq struct {
		Type          string            `json:"type"`
		Normalizers   []json.RawMessage `json:"normalizers"`
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
		Decoders      []json.RawMessage `json:"decoders"`
	}
	if json.Unmarshal(raw, &seq) != nil {
		return nil
	}
	if seq.Type == "Sequence" {
		var out []component
		for _, l := range [][]json.RawMessage{seq.Normalizers, seq.PreTokenizers, seq.Decoders} {
			for _, r := range l {
				out = append(out, components(r, depth+1)...)
			}
		}
		return out
	}
	var c component
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	return []component{c}
}

// patternOf reads a Split pattern given as {"Regex": …} or {"String": …}.
func patternOf(raw json.RawMessage) string {
	var p struct {
		Regex  string `json:"Regex"`
		String string `json:"String"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return ""
	}
	if p.Regex != "" {
		return p.Regex
	}
	return p.String
}

// tokenizerMetadata converts tokenizer.json (and tokenizer_config.json, config.json's special
// ids) to GGUF tokenizer.ggml.* metadata. vocabRows is the row count of the embedding: a
// vocabulary shorter than it is padded with unused [PADn] tokens, as llama.cpp's converter does.
func tokenizerMetadata(tj []byte, tc []byte, c *config, vocabRows int) ([]gguf.KV, error) {
	var t tokenizerJSON
	if err := json.Unmarshal(tj, &t); err != nil {
		return nil, fmt.Errorf("hf: tokenizer.json: %v", err)
	}
	var cfg tokenizerConfig
	if len(tc) > 0 {
		if err := json.Unmarshal(tc, &cfg); err != nil {
			return nil, fmt.Errorf("hf: tokenizer_config.json: %v", err)
		}
	}
	if t.Model.Type != "BPE" {
		return nil, fmt.Errorf("%w: tokenizer.json model type %q (only BPE is converted)", tokenizer.ErrUnsupported, clip(t.Model.Type))
	}
	var vocab map[string]int
	if err := json.Unmarshal(t.Model.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("hf: tokenizer.json model.vocab is not an object of token ids: %v", err)
	}
	n := 0
	check := func(id int, what string) error {
		if id < 0 || id >= maxVocab {
			return fmt.Errorf("hf: tokenizer.json %s id %d is outside 0 … %d", clip(what), id, maxVocab-1)
		}
		n = max(n, id+1)
		return nil
	}
	for w, id := range vocab {
		if err := check(id, w); err != nil {
			return nil, err
		}
	}
	for _, a := range t.AddedTokens {
		if err := check(a.ID, a.Content); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: tokenizer.json has no tokens", tokenizer.ErrBadVocab)
	}
	if vocabRows > n && vocabRows <= maxVocab {
		n = vocabRows
	}
	texts := make([]string, n)
	types := make([]int32, n)
	set := make([]bool, n)
	for w, id := range vocab {
		if set[id] {
			return nil, fmt.Errorf("%w: tokenizer.json gives id %d to %q and %q", tokenizer.ErrBadVocab, id, clip(texts[id]), clip(w))
		}
		texts[id], types[id], set[id] = w, int32(tokenizer.TypeNormal), true
	}
	for _, a := range t.AddedTokens {
		if set[a.ID] && texts[a.ID] != a.Content {
			return nil, fmt.Errorf("%w: tokenizer.json added token %q has the id %d of %q", tokenizer.ErrBadVocab, clip(a.Content), a.ID, clip(texts[a.ID]))
		}
		texts[a.ID], set[a.ID] = a.Content, true
		if a.Special {
			types[a.ID] = int32(tokenizer.TypeControl)
		} else {
			types[a.ID] = int32(tokenizer.TypeUserDefined)
		}
	}
	for i := range texts {
		if !set[i] {
			texts[i], types[i] = "[PAD"+strconv.Itoa(i)+"]", int32(tokenizer.TypeUnused)
		}
	}
	ids := make(map[string]int, n)
	for i, w := range texts {
		ids[w] = i
	}
	merges, err := parseMerges(t.Model.Merges)
	if err != nil {
		return nil, err
	}

	norm, pre, dec := components(t.Normalizer, 0), components(t.PreTokenizer, 0), components(t.Decoder, 0)
	spm := t.Model.ByteFallback
	spacePrefix := false
	for _, c := range append(append(norm, pre...), dec...) {
		switch c.Type {
		case "ByteFallback":
			spm = true
		case "Metaspace":
			spm = true
			if c.PrependScheme != "never" && (c.AddPrefix == nil || *c.AddPrefix) {
				spacePrefix = true
			}
		case "Prepend":
			if c.Prepend == "▁" {
				spm, spacePrefix = true, true
			}
		}
	}
	kv := []gguf.KV{{Key: tokenizer.KeyTokens, Value: texts}}
	if spm {
		// SentencePiece-style merging picks the highest-scoring pair: score each token by
		// the rank of the first merge that makes it, so the order is the merges' order.
		scores := make([]float32, n)
		for i := range scores {
			scores[i] = -float32(len(merges) + 1)
		}
		for r := len(merges) - 1; r >= 0; r-- {
			if id, ok := ids[merges[r][0]+merges[r][1]]; ok {
				scores[id] = -float32(r)
			}
		}
		for i, w := range texts {
			if len(w) == 6 && strings.HasPrefix(w, "<0x") && w[5] == '>' && types[i] == int32(tokenizer.TypeNormal) {
				if _, err := strconv.ParseUint(w[3:5], 16, 8); err == nil {
					types[i] = int32(tokenizer.TypeByte)
				}
			}
		}
		kv = append(kv, gguf.KV{Key: tokenizer.KeyModel, Value: "llama"}, gguf.KV{Key: tokenizer.KeyScores, Value: scores},
			gguf.KV{Key: tokenizer.KeyAddSpacePrefix, Value: spacePrefix})
	} else {
		pre, err := preName(pre)
		if err != nil {
			return nil, err
		}
		joined := make([]string, len(merges))
		for i, m := range merges {
			joined[i] = m[0] + " " + m[1]
		}
		kv = append(kv, gguf.KV{Key: tokenizer.KeyModel, Value: "gpt2"}, gguf.KV{Key: tokenizer.KeyPre, Value: pre},
			gguf.KV{Key: tokenizer.KeyMerges, Value: joined})
	}
	special := func(fromCfg json.RawMessage, fromModel json.RawMessage) (int, bool) {
		if s, ok := tokenText(fromCfg); ok {
			if id, ok := ids[s]; ok {
				return id, true
			}
		}
		if id, ok := firstID(fromModel); ok && id >= 0 && id < n {
			return id, true
		}
		return 0, false
	}
	var bos, eos int
	var hasBOS, hasEOS bool
	if c != nil {
		bos, hasBOS = special(cfg.BOS, c.BOS)
		eos, hasEOS = special(cfg.EOS, c.EOS)
	} else {
		bos, hasBOS = special(cfg.BOS, nil)
		eos, hasEOS = special(cfg.EOS, nil)
	}
	if hasBOS {
		kv = append(kv, gguf.KV{Key: tokenizer.KeyBOS, Value: uint32(bos)})
	}
	if hasEOS {
		kv = append(kv, gguf.KV{Key: tokenizer.KeyEOS, Value: uint32(eos)})
	}
	unk := ""
	if t.Model.UnkToken != nil {
		unk = *t.Model.UnkToken
	} else if s, ok := tokenText(cfg.UNK); ok {
		unk = s
	}
	if id, ok := ids[unk]; ok && unk != "" {
		kv = append(kv, gguf.KV{Key: tokenizer.KeyUNK, Value: uint32(id)})
		if types[id] == int32(tokenizer.TypeControl) || types[id] == int32(tokenizer.TypeNormal) {
			types[id] = int32(tokenizer.TypeUnknown)
		}
	}
	if s, ok := tokenText(cfg.PAD); ok {
		if id, ok := ids[s]; ok {
			kv = append(kv, gguf.KV{Key: tokenizer.KeyPAD, Value: uint32(id)})
		}
	}
	addBOS, addEOS := templateAdds(t.PostProcessor, texts, bos, hasBOS, eos, hasEOS)
	if cfg.AddBOS != nil {
		addBOS = *cfg.AddBOS
	}
	if cfg.AddEOS != nil {
		addEOS = *cfg.AddEOS
	}
	kv = append(kv, gguf.KV{Key: tokenizer.KeyTokenType, Value: types},
		gguf.KV{Key: tokenizer.KeyAddBOS, Value: addBOS && hasBOS}, gguf.KV{Key: tokenizer.KeyAddEOS, Value: addEOS && hasEOS})
	if tmpl := chatTemplate(cfg.ChatTemplate); tmpl != "" {
		kv = append(kv, gguf.KV{Key: "tokenizer.chat_template", Value: tmpl})
	}
	return kv, nil
}

// parseMerges reads model.merges: "left right" strings, or [left, right] pairs.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][2]string, 0, len(strs))
		for i, m := range strs {
			l, r, ok := strings.Cut(m, " ")
			if !ok {
				return nil, fmt.Errorf("%w: tokenizer.json merge %d %q has no space", tokenizer.ErrBadVocab, i, clip(m))
			}
			out = append(out, [2]string{l, r})
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json model.merges is neither strings nor pairs", tokenizer.ErrBadVocab)
	}
	out := make([][2]string, 0, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("%w: tokenizer.json merge %d has %d parts", tokenizer.ErrBadVocab, i, len(p))
		}
		out = append(out, [2]string{p[0], p[1]})
	}
	return out, nil
}

// preName names the byte-level pre-tokenizer for tokenizer.ggml.pre from its Split patterns.
func preName(pre []component) (string, error) {
	var pats []string
	byteLevelRegex := false
	for _, c := range pre {
		switch c.Type {
		case "Split":
			pats = append(pats, patternOf(c.Pattern))
		case "ByteLevel":
			byteLevelRegex = c.UseRegex == nil || *c.UseRegex
		case "Digits", "Punctuation", "Whitespace", "WhitespaceSplit":
			pats = append(pats, c.Type)
		}
	}
	switch {
	case len(pats) == 0 && byteLevelRegex:
		return "gpt2", nil
	case len(pats) == 1 && !byteLevelRegex:
		switch pats[0] {
		case patGPT2:
			return "gpt2", nil
		case patLlama3:
			return "llama-bpe", nil
		case patQwen2:
			return "qwen2", nil
		}
	}
	return "", fmt.Errorf("%w: tokenizer.json pre-tokenizer %q is not one kvlab knows (known: the GPT-2, Llama 3 and Qwen2 patterns)",
		tokenizer.ErrUnsupported, clip(strings.Join(pats, " + ")))
}

// templateAdds reads whether the post-processor's single-sequence template begins with BOS or
// ends with EOS.
func templateAdds(raw json.RawMessage, texts []string, bos int, hasBOS bool, eos int, hasEOS bool) (bool, bool) {
	var p struct {
		Type   string `json:"type"`
		Single []struct {
			SpecialToken *struct {
				ID string `json:"id"`
			} `json:"SpecialToken"`
		} `json:"single"`
		Processors []json.RawMessage `json:"processors"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return false, false
	}
	if p.Type == "Sequence" {
		for _, r := range p.Processors {
			if b, e := templateAdds(r, texts, bos, hasBOS, eos, hasEOS); b || e {
				return b, e
			}
		}
		return false, false
	}
	if p.Type != "TemplateProcessing" || len(p.Single) == 0 {
		return false, false
	}
	is := func(i, id int, has bool) bool {
		st := p.Single[i].SpecialToken
		return has && st != nil && st.ID == texts[id]
	}
	return is(0, bos, hasBOS), is(len(p.Single)-1, eos, hasEOS)
}

// chatTemplate reads tokenizer_config.json's chat_template: a string, or a list of named
// templates of which "default" (else the first) is taken.
func chatTemplate(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var l []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if json.Unmarshal(raw, &l) != nil || len(l) == 0 {
		return ""
	}
	for _, t := range l {
		if t.Name == "default" {
			return t.Template
		}
	}
	return l[0].Template
}
