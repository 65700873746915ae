// Package tokenizer builds the tokenizers llama.cpp builds from GGUF metadata and reproduces
// their token ids exactly:
//
//   - SPM (tokenizer.ggml.model = "llama"): SentencePiece-style merging of the highest-scoring
//     adjacent pair, with spaces escaped to U+2581 "▁", an optional dummy-prefix space, and byte
//     fallback to <0xXX> tokens.
//   - BPE (tokenizer.ggml.model = "gpt2"): byte-level BPE over the GPT-2 byte↔unicode map with
//     merges ranked by tokenizer.ggml.merges, after a pre-tokenizer chosen by tokenizer.ggml.pre
//     (GPT-2, Llama 3, Qwen2, Falcon, StarCoder, DeepSeek LLM/Coder/V3, Bloom, Viking, Tekken,
//     GPT-4o, Seed-Coder and llama.cpp's default chain; see preConfigs for the names).
//
// Special tokens (control, user-defined, unknown) are split out of the text before either
// algorithm runs, as llama.cpp does; control and unknown tokens only when the caller asks to
// parse them.
//
// Token ids are int32, as in llama.cpp and GGUF. A Tokenizer is immutable after FromGGUF and is
// safe for concurrent use.
package tokenizer

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Metadata is the read side of a GGUF file's key/value metadata that a tokenizer needs. It is
// satisfied by *gguf.File. Each method returns ok=false when the key is missing or its value is
// not of the requested kind.
type Metadata interface {
	String(key string) (string, bool)
	// Uint returns an integer value of any width and sign that is non-negative.
	Uint(key string) (uint64, bool)
	// Int returns an integer value of any width and sign that fits in an int64.
	Int(key string) (int64, bool)
	Bool(key string) (bool, bool)
	Strings(key string) ([]string, bool)
	// Float32s returns a float32 array, or another numeric array converted to float32.
	Float32s(key string) ([]float32, bool)
	// Int32s returns an int32 array, or another integer array whose elements fit in int32.
	Int32s(key string) ([]int32, bool)
}

// Metadata keys read by FromGGUF.
const (
	KeyModel          = "tokenizer.ggml.model"
	KeyPre            = "tokenizer.ggml.pre"
	KeyTokens         = "tokenizer.ggml.tokens"
	KeyScores         = "tokenizer.ggml.scores"
	KeyTokenType      = "tokenizer.ggml.token_type"
	KeyMerges         = "tokenizer.ggml.merges"
	KeyBOS            = "tokenizer.ggml.bos_token_id"
	KeyEOS            = "tokenizer.ggml.eos_token_id"
	KeyEOT            = "tokenizer.ggml.eot_token_id"
	KeyEOM            = "tokenizer.ggml.eom_token_id"
	KeyUNK            = "tokenizer.ggml.unknown_token_id"
	KeyPAD            = "tokenizer.ggml.padding_token_id"
	KeyAddBOS         = "tokenizer.ggml.add_bos_token"
	KeyAddEOS         = "tokenizer.ggml.add_eos_token"
	KeyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNoTokenizer means the metadata holds no tokenizer (no tokenizer.ggml.model, or "none").
	ErrNoTokenizer = errors.New("tokenizer: the model has no tokenizer")
	// ErrUnsupported means the tokenizer model or pre-tokenizer is one this package does not build.
	ErrUnsupported = errors.New("tokenizer: unsupported tokenizer")
	// ErrBadVocab means the vocabulary metadata is missing or inconsistent.
	ErrBadVocab = errors.New("tokenizer: bad vocabulary")
)

// NoToken is the id of a special token the vocabulary does not have (llama.cpp's
// LLAMA_TOKEN_NULL).
const NoToken int32 = -1

// TokenType is a token's type as tokenizer.ggml.token_type stores it.
type TokenType int32

// Token types, with llama.cpp's values.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// String returns the type's name, e.g. "normal" or "control".
func (t TokenType) String() string {
	switch t {
	case TypeNormal:
		return "normal"
	case TypeUnknown:
		return "unknown"
	case TypeControl:
		return "control"
	case TypeUserDefined:
		return "user-defined"
	case TypeUnused:
		return "unused"
	case TypeByte:
		return "byte"
	}
	return "undefined"
}

// attr is llama.cpp's llama_token_attr: a bit set, because load-time fixes add bits (a token
// found to end generation becomes control as well as whatever it was).
type attr uint16

const (
	attrUnknown attr = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
)

func attrOf(t TokenType) attr {
	switch t {
	case TypeNormal:
		return attrNormal
	case TypeUnknown:
		return attrUnknown
	case TypeControl:
		return attrControl
	case TypeUserDefined:
		return attrUserDefined
	case TypeUnused:
		return attrUnused
	case TypeByte:
		return attrByte
	}
	return 0
}

// Kind is the tokenizer algorithm.
type Kind int

// Kinds of tokenizer.
const (
	SPM Kind = iota + 1 // tokenizer.ggml.model "llama"
	BPE                 // tokenizer.ggml.model "gpt2"
)

// String returns "SPM" or "BPE".
func (k Kind) String() string {
	switch k {
	case SPM:
		return "SPM"
	case BPE:
		return "BPE"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Tokenizer encodes text to token ids and decodes ids to text for one vocabulary.
type Tokenizer struct {
	kind  Kind
	model string // tokenizer.ggml.model
	pre   string // tokenizer.ggml.pre as given ("" when missing)

	texts  []string // token id → text
	scores []float32
	types  []TokenType
	attrs  []attr
	ids    map[string]int32
	pieces []string // token id → decoded bytes, control tokens included (llama.cpp's piece cache)

	merges  map[mergeKey]int32 // BPE only
	pretok  preTokenizer       // BPE only
	byteTok [256]int32         // SPM: byte b → <0xXX> token (or the one-byte text), NoToken if none

	special []int32 // control, user-defined and unknown ids, longest text first

	bos, eos, eot, eom, unk, pad int32
	eog                          map[int32]bool

	addBOS, addEOS bool
	addSpacePrefix bool // SPM: prefix a space to text that follows a special token or starts
	ignoreMerges   bool // BPE: a pre-token that is a whole token is emitted as is
	cleanSpaces    bool // Detokenize: clean_up_tokenization_spaces
}

type mergeKey struct{ left, right string }

// preConfig is what a tokenizer.ggml.pre name sets in llama.cpp.
type preConfig struct {
	pretok       preTokenizer
	ignoreMerges bool
	addBOS       bool // add_bos default becomes true
	noCleanup    bool // clean_spaces = false
	noBOS        bool // special_bos_id = LLAMA_TOKEN_NULL
}

// preConfigs maps the tokenizer.ggml.pre names this package builds to llama.cpp's settings
// for them (the pattern chain and the flags the name sets). "gpt2" is accepted as an alias of "gpt-2".
var preConfigs = func() map[string]preConfig {
	m := map[string]preConfig{
		"default":         {pretok: preDefault},
		"dbrx":            {pretok: preLlama3},
		"smaug-bpe":       {pretok: preLlama3},
		"glm4":            {pretok: preLlama3, noBOS: true},
		"chatglm-bpe":     {pretok: preLlama3, noBOS: true},
		"megrez":          {pretok: preQwen2},
		"stablelm2":       {pretok: preQwen2},
		"hunyuan":         {pretok: preQwen2, noCleanup: true},
		"solar-open":      {pretok: preQwen2, noCleanup: true},
		"trillion":        {pretok: preGPT2, noCleanup: true},
		"granite-docling": {pretok: preGPT2, noCleanup: true},
		"falcon":          {pretok: preFalcon},
		"deepseek-llm":    {pretok: preDeepSeekLLM, noCleanup: true},
		"deepseek-coder":  {pretok: preDeepSeekCoder, noCleanup: true},
		"deepseek-v3":     {pretok: preDeepSeekV3, noCleanup: true},
		"viking":          {pretok: preViking, noCleanup: true},
		"poro-chat":       {pretok: preBloom, noCleanup: true},
		"bloom":           {pretok: preBloom},
		"gpt3-finnish":    {pretok: preBloom},
		"tekken":          {pretok: preTekken, noCleanup: true, ignoreMerges: true, addBOS: true},
		"seed-coder":      {pretok: preSeedCoder, noCleanup: true},
		"hunyuan-dense":   {pretok: preDeepSeekV3, noCleanup: true},
		"grok-2":          {pretok: preQwen2, noCleanup: true},
	}
	for _, n := range []string{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"} {
		m[n] = preConfig{pretok: preGPT4o, noCleanup: true}
	}
	for _, n := range []string{"bailingmoe", "bailingmoe2", "llada-moe"} {
		m[n] = preConfig{pretok: preQwen2, noCleanup: true} // Qwen2's pattern, spelled differently
	}
	for _, n := range []string{"starcoder", "refact", "codeshell", "exaone", "minerva-7b"} {
		m[n] = preConfig{pretok: preStarCoder}
	}
	for _, n := range []string{"command-r", "smollm"} {
		m[n] = preConfig{pretok: preStarCoder, noCleanup: true}
	}
	for _, n := range []string{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
		"midm-2.0", "lfm2", "jina-v5-nano"} {
		m[n] = preConfig{pretok: preLlama3, ignoreMerges: true, addBOS: true}
	}
	for _, n := range []string{"gpt2", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",
		"jina-v2-de", "jina-v1-en", "jina-v2-code", "roberta-bpe", "a.x-4.0", "mellum", "modern-bert", "exaone4", "mpt", "olmo", "jais"} {
		m[n] = preConfig{pretok: preGPT2}
	}
	for _, n := range []string{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"} {
		m[n] = preConfig{pretok: preQwen2, noCleanup: true}
	}
	return m
}()

// eogTexts are the token texts llama.cpp treats as ending generation whatever their metadata.
var eogTexts = map[string]bool{
	"<|eot_id|>": true, "<|im_end|>": true, "<|end|>": true, "<|return|>": true, "<|call|>": true,
	"<|flush|>": true, "<|calls|>": true, "<end_of_turn>": true, "<|endoftext|>": true,
	"</s>": true, "<|eom_id|>": true, "<EOT>": true, "_<EOT>": true, "[EOT]": true, "[EOS]": true,
	"<|end_of_text|>": true, "<end_of_utterance>": true, "<eos>": true, "<turn|>": true,
	"<|tool_response>": true, "<｜end▁of▁sentence｜>": true, "[e~[": true,
}

// eotTexts are the texts llama.cpp takes as the end-of-turn token when the metadata names none.
var eotTexts = map[string]bool{
	"<|eot_id|>": true, "<|im_end|>": true, "<|end|>": true, "<end_of_turn>": true,
	"<|endoftext|>": true, "<|end_of_text|>": true, "<EOT>": true, "_<EOT>": true, "[EOT]": true,
	"<｜end▁of▁sentence｜>": true, "<end_of_utterance>": true,
}

// fimRoles are the fill-in-the-middle tokens: the metadata keys that name them, the texts
// llama.cpp recognises them by otherwise, and whether the role ends generation.
var fimRoles = []struct {
	key, deprecated string
	texts           []string
	eog             bool
}{
	{"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id", []string{"<|fim_prefix|>",
		"<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}, false},
	{"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id", []string{"<|fim_suffix|>",
		"<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}, false},
	{"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id", []string{"<|fim_middle|>",
		"<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}, false},
	{"tokenizer.ggml.fim_pad_token_id", "", []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}, true},
	{"tokenizer.ggml.fim_rep_token_id", "", []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}, true},
	{"tokenizer.ggml.fim_sep_token_id", "", []string{"<|file_sep|>"}, true},
}

// FromGGUF builds the tokenizer described by md's tokenizer.ggml.* keys, with llama.cpp's
// defaults for the keys that are absent. It fails with ErrNoTokenizer when there is no
// tokenizer, ErrUnsupported for a tokenizer model or pre-tokenizer it does not build (naming
// it), and ErrBadVocab when the vocabulary is missing or inconsistent (an array whose length is
// not the token count, a duplicate token, missing merges, add_bos without a BOS id, …).
func FromGGUF(md Metadata) (*Tokenizer, error) {
	model, ok := md.String(KeyModel)
	if !ok || model == "none" || model == "no_vocab" {
		return nil, ErrNoTokenizer
	}
	t := &Tokenizer{model: model, eot: NoToken, eom: NoToken, pad: NoToken}
	t.pre, _ = md.String(KeyPre)

	switch model {
	case "llama":
		t.kind = SPM
		t.bos, t.eos, t.unk = 1, 2, 0
		t.addSpacePrefix, t.addBOS = true, true
	case "gpt2":
		t.kind = BPE
		t.bos, t.eos, t.unk = 11, 11, NoToken
		t.cleanSpaces = true
		name := t.pre
		if name == "" {
			name = "default" // llama.cpp warns and uses its default chain
		}
		pc, ok := preConfigs[name]
		if !ok {
			return nil, fmt.Errorf("%w: pre-tokenizer %s = %q", ErrUnsupported, KeyPre, t.pre)
		}
		t.pretok, t.ignoreMerges = pc.pretok, pc.ignoreMerges
		t.addBOS = pc.addBOS
		t.cleanSpaces = !pc.noCleanup
		if pc.noBOS {
			t.bos = NoToken
		}
	default:
		return nil, fmt.Errorf("%w: %s = %q (supported: \"llama\", \"gpt2\")", ErrUnsupported, KeyModel, model)
	}
	if v, ok := md.Bool(KeyAddSpacePrefix); ok {
		t.addSpacePrefix = v
	}

	if err := t.loadVocab(md); err != nil {
		return nil, err
	}
	if t.kind == BPE {
		if err := t.loadMerges(md); err != nil {
			return nil, err
		}
	}
	if err := t.loadSpecial(md); err != nil {
		return nil, err
	}
	t.buildCaches()
	return t, nil
}

func (t *Tokenizer) loadVocab(md Metadata) error {
	texts, ok := md.Strings(KeyTokens)
	if !ok {
		return fmt.Errorf("%w: %s is missing or not a string array", ErrBadVocab, KeyTokens)
	}
	if len(texts) == 0 {
		return fmt.Errorf("%w: %s is empty", ErrBadVocab, KeyTokens)
	}
	if len(texts) > 1<<31-1 {
		return fmt.Errorf("%w: %s has %d tokens, more than int32 ids can number", ErrBadVocab, KeyTokens, len(texts))
	}
	n := len(texts)
	t.scores = make([]float32, n)
	if s, ok := md.Float32s(KeyScores); ok {
		if len(s) != n {
			return fmt.Errorf("%w: %s has %d entries for %d tokens", ErrBadVocab, KeyScores, len(s), n)
		}
		copy(t.scores, s)
	} else if _, present := md.Strings(KeyScores); present {
		return fmt.Errorf("%w: %s is not a numeric array", ErrBadVocab, KeyScores)
	}
	t.types = make([]TokenType, n)
	t.attrs = make([]attr, n)
	if ty, ok := md.Int32s(KeyTokenType); ok {
		if len(ty) != n {
			return fmt.Errorf("%w: %s has %d entries for %d tokens", ErrBadVocab, KeyTokenType, len(ty), n)
		}
		for i, v := range ty {
			t.types[i] = TokenType(v)
			t.attrs[i] = attrOf(TokenType(v))
		}
	} else {
		for i := range t.types {
			t.types[i], t.attrs[i] = TypeNormal, attrNormal
		}
	}

	t.texts = make([]string, n)
	t.ids = make(map[string]int32, n)
	for i, w := range texts {
		if w == "" {
			w = "[EMPTY_" + strconv.Itoa(i) + "]" // as llama.cpp names an empty token
		}
		if j, dup := t.ids[w]; dup {
			return fmt.Errorf("%w: duplicate token %q has ids %d and %d", ErrBadVocab, w, j, i)
		}
		t.ids[w] = int32(i)
		t.texts[i] = w
	}
	return nil
}

func (t *Tokenizer) loadMerges(md Metadata) error {
	merges, ok := md.Strings(KeyMerges)
	if !ok {
		return fmt.Errorf("%w: %s is missing or not a string array (a gpt2 tokenizer needs it)", ErrBadVocab, KeyMerges)
	}
	t.merges = make(map[mergeKey]int32, len(merges))
	for i, m := range merges {
		var k mergeKey
		// llama.cpp splits at the first space after the first byte; a merge without one ranks
		// the pair ("", ""), which no lookup asks for.
		if len(m) > 1 {
			if j := strings.IndexByte(m[1:], ' '); j >= 0 {
				k = mergeKey{m[:j+1], m[j+2:]}
			}
		}
		if _, seen := t.merges[k]; !seen {
			t.merges[k] = int32(i)
		}
	}
	return nil
}

// specialID reads the id under key: a value that is not a valid id keeps def, as llama.cpp
// does (it warns), and a default outside the vocabulary becomes NoToken.
func (t *Tokenizer) specialID(md Metadata, key string, def int32) int32 {
	n := uint64(len(t.texts))
	if def >= 0 && uint64(def) >= n {
		def = NoToken
	}
	if v, ok := md.Uint(key); ok && v < n {
		return int32(v)
	}
	return def
}

func (t *Tokenizer) loadSpecial(md Metadata) error {
	t.bos = t.specialID(md, KeyBOS, t.bos)
	t.eos = t.specialID(md, KeyEOS, t.eos)
	t.eot = t.specialID(md, KeyEOT, t.eot)
	t.eom = t.specialID(md, KeyEOM, t.eom)
	t.unk = t.specialID(md, KeyUNK, t.unk)
	t.pad = t.specialID(md, KeyPAD, t.pad)
	if v, ok := md.Bool(KeyAddBOS); ok {
		t.addBOS = v
	}
	if v, ok := md.Bool(KeyAddEOS); ok {
		t.addEOS = v
	}
	if t.addBOS && t.bos == NoToken {
		return fmt.Errorf("%w: %s is true, but %s is not set", ErrBadVocab, KeyAddBOS, KeyBOS)
	}
	if t.addEOS && t.eos == NoToken {
		return fmt.Errorf("%w: %s is true, but %s is not set", ErrBadVocab, KeyAddEOS, KeyEOS)
	}

	// Tokens llama.cpp recognises by their text when the metadata names none: end of turn, end
	// of message and the fill-in-the-middle roles, each made a control token; then every
	// end-of-generation token, likewise made control.
	fim := make([]int32, len(fimRoles))
	for i, r := range fimRoles {
		fim[i] = t.specialID(md, r.key, NoToken)
		if r.deprecated != "" {
			fim[i] = t.specialID(md, r.deprecated, fim[i])
		}
	}
	for id, text := range t.texts {
		id := int32(id)
		if t.eot == NoToken && eotTexts[text] {
			t.eot = id
			t.attrs[id] |= attrControl
		}
		if t.eom == NoToken && text == "<|eom_id|>" {
			t.eom = id
			t.attrs[id] |= attrControl
		}
		for i, r := range fimRoles {
			if fim[i] == NoToken && slices.Contains(r.texts, text) {
				fim[i] = id
				t.attrs[id] |= attrControl
			}
		}
	}
	t.eog = map[int32]bool{}
	for i, r := range fimRoles {
		if r.eog && fim[i] != NoToken {
			t.eog[fim[i]] = true
		}
	}
	for id, text := range t.texts {
		if t.attrs[id]&attrControl != 0 && strings.Contains(text, "unused") {
			t.attrs[id] |= attrUnused
		}
	}
	for id, text := range t.texts {
		if eogTexts[text] {
			t.eog[int32(id)] = true
			t.attrs[id] |= attrControl
		}
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id != NoToken {
			t.eog[id] = true
		}
	}
	// With both <|return|> and <|call|> (gpt-oss), or <|calls|> and <|flush|> (solar-open),
	// <|end|> ends a message, not generation, and llama.cpp makes it user-defined.
	has := func(s string) bool { id, ok := t.ids[s]; return ok && t.eog[id] }
	if id, ok := t.ids["<|end|>"]; ok && t.eog[id] &&
		((has("<|return|>") && (has("<|call|>") || has("<|calls|>"))) || (has("<|calls|>") && has("<|flush|>"))) {
		delete(t.eog, id)
		t.attrs[id] = attrUserDefined
	}
	return nil
}

func (t *Tokenizer) buildCaches() {
	for id, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.special = append(t.special, int32(id))
		}
	}
	slices.SortStableFunc(t.special, func(a, b int32) int {
		return cmp.Compare(len(t.texts[b]), len(t.texts[a]))
	})

	if t.kind == SPM {
		for b := range 256 {
			t.byteTok[b] = NoToken
			if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
				t.byteTok[b] = id
			} else if id, ok := t.ids[string([]byte{byte(b)})]; ok {
				t.byteTok[b] = id
			}
		}
	}

	t.pieces = make([]string, len(t.texts))
	for id := range t.texts {
		t.pieces[id] = t.computePiece(int32(id))
	}
}

// Kind returns the tokenizer algorithm.
func (t *Tokenizer) Kind() Kind { return t.kind }

// Model returns tokenizer.ggml.model ("llama" or "gpt2").
func (t *Tokenizer) Model() string { return t.model }

// Pre returns tokenizer.ggml.pre as the metadata gives it, "" when absent.
func (t *Tokenizer) Pre() string { return t.pre }

// VocabSize returns the number of tokens; valid ids are 0 … VocabSize()-1.
func (t *Tokenizer) VocabSize() int { return len(t.texts) }

// BOS returns the beginning-of-sequence id, or NoToken.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence id, or NoToken.
func (t *Tokenizer) EOS() int32 { return t.eos }

// EOT returns the end-of-turn id, or NoToken.
func (t *Tokenizer) EOT() int32 { return t.eot }

// UNK returns the unknown-token id, or NoToken.
func (t *Tokenizer) UNK() int32 { return t.unk }

// PAD returns the padding id, or NoToken.
func (t *Tokenizer) PAD() int32 { return t.pad }

// AddBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with addSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// IsEOG reports whether id ends generation: EOS, EOT, EOM, or a token whose text llama.cpp
// treats as an end-of-generation marker (<|im_end|>, <|eot_id|>, …).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// TokenText returns the vocabulary text of id (with ▁ for spaces in SPM vocabularies and the
// byte↔unicode map applied in BPE ones), or "" when id is out of range.
func (t *Tokenizer) TokenText(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.texts[id]
}

// TokenType returns the type of id from tokenizer.ggml.token_type (TypeNormal when the metadata
// has none), or TypeUndefined when id is out of range.
func (t *Tokenizer) TokenType(id int32) TokenType {
	if !t.valid(id) {
		return TypeUndefined
	}
	return t.types[id]
}

// Score returns the score of id (0 when the metadata has no scores or id is out of range).
func (t *Tokenizer) Score(id int32) float32 {
	if !t.valid(id) {
		return 0
	}
	return t.scores[id]
}

// TokenID returns the id whose vocabulary text is exactly text.
func (t *Tokenizer) TokenID(text string) (int32, bool) {
	id, ok := t.ids[text]
	return id, ok
}

// IsControl reports whether id is a control token (including tokens made control because they
// end generation).
func (t *Tokenizer) IsControl(id int32) bool { return t.valid(id) && t.attrs[id]&attrControl != 0 }

func (t *Tokenizer) valid(id int32) bool { return id >= 0 && int(id) < len(t.texts) }
