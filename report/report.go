// Package report holds the documents kvlab's measurements produce (an A/B run's report and its
// parts), so that readers of them (the run history, the API documents, the pages) need no engine
// code: it imports nothing of kvlab.
package report

import "fmt"

// ABReport is the result of an A/B run.
type ABReport struct {
	Model    ModelInfo   `json:"model"`
	Settings ABSettings  `json:"settings"`
	Ref      RefResult   `json:"reference"`
	Determ   Determinism `json:"determinism"`
	// QuerySource says where the attention gate's queries come from: "model" (the reference
	// run's own queries, when the model reports them) or "key-proxy" (see AttentionGate).
	QuerySource string      `json:"query_source"`
	Arms        []ArmResult `json:"arms"`
	// Elapsed is the wall time of the whole run in seconds.
	Elapsed float64 `json:"elapsed_s"`
}

// ModelInfo is the geometry of the measured model.
type ModelInfo struct {
	Arch       string `json:"arch"`
	Layers     int    `json:"layers"`
	Heads      int    `json:"heads"`
	KVHeads    int    `json:"kv_heads"`
	HeadDimK   int    `json:"head_dim_k"`
	HeadDimV   int    `json:"head_dim_v"`
	Embd       int    `json:"embd"`
	Vocab      int    `json:"vocab"`
	Context    int    `json:"context"`
	WeightType string `json:"weight_type"`
	Threads    int    `json:"threads"`
}

// ABSettings are the run's resolved settings.
type ABSettings struct {
	Arms         []string  `json:"arms"`
	Ctx          int       `json:"ctx"`
	N            int       `json:"n"`
	PromptTokens int       `json:"prompt_tokens"`
	TextTokens   int       `json:"text_tokens"`
	PPLChunks    int       `json:"ppl_chunks"`
	NeedleDepths []float64 `json:"needle_depths,omitempty"`
	NeedleTrials int       `json:"needle_trials,omitempty"`
	NeedleTokens int       `json:"needle_tokens,omitempty"`
	Seed         uint64    `json:"seed"`
	// SpeedRounds is how many times the decode was timed (lab.ABConfig.SpeedRounds): the
	// decode speeds are the sums of every position's fastest time; 0 for one.
	SpeedRounds int `json:"speed_rounds,omitempty"`
}

// RefResult is the f16 reference's own measurements.
type RefResult struct {
	// PPL is the perplexity of the text by llama.cpp's convention (lab.Perplexity) at Ctx,
	// the number `kvlab ppl --kv f16 --ctx Ctx` prints for the same text; 0 when the text is
	// shorter than one chunk.
	PPL float64 `json:"ppl"`
	// DecodePPL is exp(mean −log p) of the continuation's tokens along the decode path.
	DecodePPL  float64      `json:"decode_ppl"`
	Needle     NeedleResult `json:"needle"`
	PrefillTPS float64      `json:"prefill_tps"`
	DecodeTPS  float64      `json:"decode_tps"`
}

// Determinism is the check seed 003 insists on: a second f16 run scores KL exactly 0.
type Determinism struct {
	// Identical reports every prompt and decode logit of the second run bit-identical to the
	// first; MaxKL is the largest KL between them (0 when identical).
	Identical bool    `json:"identical"`
	MaxKL     float64 `json:"max_kl"`
	Rows      int     `json:"rows"`
}

// ArmResult is one arm's measurements against the reference.
type ArmResult struct {
	Arm    string `json:"arm"`
	Pair   string `json:"pair"`
	Window int    `json:"window,omitempty"`
	// Recent is the mixed cache's f16 recent window (the tail only quantized).
	Recent int     `json:"recent,omitempty"`
	Sinks  int     `json:"sinks,omitempty"`
	KGain  float32 `json:"k_gain,omitempty"`
	// Decode compares the teacher-forced decode rows: the arm fed the reference continuation
	// one token at a time, reading its cache through the decode readers (the overlay acts).
	Decode Series `json:"decode"`
	// Prompt compares the prompt's logits (prefill; the overlay does not act there).
	Prompt Series `json:"prompt"`
	// PPL is the text's perplexity with this cache (llama.cpp's convention, prefill only);
	// DecodePPL the continuation's along the decode path.
	PPL       float64 `json:"ppl"`
	DecodePPL float64 `json:"decode_ppl"`
	// AttnErr is, per layer, the relative RMS error of softmax(q·Kᵀ/√d)·V over this arm's
	// cache against the f16 cache, both holding the reference run's own K/V; AttnErrMean is
	// their mean.
	AttnErr     []float64    `json:"attn_err"`
	AttnErrMean float64      `json:"attn_err_mean"`
	Needle      NeedleResult `json:"needle"`
	// PrefillTPS and DecodeTPS are tokens per second of the teacher-forced prefill and decode
	// (the decode's over the fastest of Settings.SpeedRounds timings of each position).
	PrefillTPS float64 `json:"prefill_tps"`
	DecodeTPS  float64 `json:"decode_tps"`
	// KVBytes is the cache's exact memory at Ctx cells (overlay included); BytesPerToken the
	// K+V bytes one cell takes over all layers (kvq's exact arithmetic, overlay excluded).
	KVBytes       int64   `json:"kv_bytes"`
	BytesPerToken float64 `json:"bytes_per_token"`
}

// NeedleResult is an arm's score on the probe.
type NeedleResult struct {
	OK     int           `json:"ok"`
	Total  int           `json:"total"`
	Trials []NeedleTrial `json:"trials,omitempty"`
}

// NeedleTrial is one prompt of the probe.
type NeedleTrial struct {
	Depth float64 `json:"depth"`
	// Pos is the token index where the fact starts; Tokens the prompt's length.
	Pos    int    `json:"pos"`
	Tokens int    `json:"tokens"`
	Want   string `json:"want"`
	Got    string `json:"got"`
	OK     bool   `json:"ok"`
}

// String is "ok/total".
func (n NeedleResult) String() string {
	if n.Total == 0 {
		return "not run"
	}
	return fmt.Sprintf("%d/%d", n.OK, n.Total)
}

// Series summarizes per-position KL divergences and top-1 agreement.
type Series struct {
	// KLMean is the mean KL(f16 ‖ arm) in nats; KLP99 its 99th percentile (nearest rank) and
	// KLMax its largest value.
	KLMean float64 `json:"kl_mean"`
	KLP99  float64 `json:"kl_p99"`
	KLMax  float64 `json:"kl_max"`
	// Top1 is the fraction of positions whose most likely token agrees with the reference's.
	Top1 float64 `json:"top1"`
	// Positions is the number of positions compared.
	Positions int `json:"positions"`
	// KL and Agree are the per-position values, in position order.
	KL    []float64 `json:"kl,omitempty"`
	Agree []bool    `json:"agree,omitempty"`
}
