// Package api holds the documents of kvlab's JSON API (docs/api.md) that the server answers and
// the page components render, so both read the same fields. It imports no engine code (the
// server converts the engine's values at its edge), so the pages link none.
package api

import "github.com/kvlab/kvlab/report"

// MemInfo is the memory the KV policy budgets against: a GPU's when the engine runs on one, else
// the host's.
type MemInfo struct {
	// TotalBytes and FreeBytes are the memory's size and what is free (available) now.
	TotalBytes int64 `json:"total_bytes"`
	FreeBytes  int64 `json:"free_bytes"`
	// Source says where the numbers come from ("/proc/meminfo MemAvailable").
	Source string `json:"source"`
}

// SystemInfo is /api/system: the machine, the models and what the server is doing.
type SystemInfo struct {
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPU       string `json:"cpu,omitempty"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	// Device is what the engine computes on.
	Device string `json:"device"`
	// GPUs are the NVIDIA GPUs gpuinfo sees; GPUError says why there are none.
	GPUs     []GPU  `json:"gpus"`
	GPUError string `json:"gpu_error,omitempty"`
	// Memory is the memory the KV policy budgets against; MemoryError says why it is unknown.
	Memory      MemInfo `json:"memory"`
	MemoryError string  `json:"memory_error,omitempty"`

	Models []ModelStatus `json:"models"`
	// KVBytes is the memory of every KV cache of every loaded model.
	KVBytes int64 `json:"kv_bytes"`

	Running       int     `json:"generations_running"`
	Queued        int     `json:"generations_queued"`
	MaxConcurrent int     `json:"max_concurrent"`
	MaxQueue      int     `json:"max_queue"`
	Sessions      int     `json:"chat_sessions"`
	History       string  `json:"run_history"`
	Auth          bool    `json:"api_key_required"`
	UptimeSeconds float64 `json:"uptime_seconds"`
}

// GPU is one NVIDIA GPU as the system page lists it (native/gpuinfo's Device, field for field).
type GPU struct {
	Index      int    `json:"index"`
	Name       string `json:"name"`
	UUID       string `json:"uuid,omitempty"`
	TotalBytes uint64 `json:"total_bytes"`
	FreeBytes  uint64 `json:"free_bytes"`
	// UtilGPU and UtilMemory are the percent of time over the last sample period that a
	// kernel ran and that memory was read or written; −1 when the source cannot tell.
	UtilGPU    int    `json:"util_gpu"`
	UtilMemory int    `json:"util_memory"`
	Compute    string `json:"compute_capability,omitempty"` // "9.0"
	Driver     string `json:"driver,omitempty"`             // driver version
	// Source is what answered: "nvml" (go-nvml), "nvml-purego", or "cuda".
	Source string `json:"source"`
}

// ModelStatus is one model as the server sees it.
type ModelStatus struct {
	Name   string `json:"name"`
	Title  string `json:"title,omitempty"`
	Path   string `json:"path"`
	Source string `json:"source"`
	Arch   string `json:"arch"`
	Size   int64  `json:"size_bytes"`
	// Supported reports that the engine runs the architecture.
	Supported bool   `json:"supported"`
	Loaded    bool   `json:"loaded"`
	Error     string `json:"error,omitempty"`

	// Set once loaded.
	Ctx      int    `json:"ctx,omitempty"`
	KVFormat string `json:"kv_format,omitempty"`
	KVReason string `json:"kv_reason,omitempty"`
	// KVWarning is one line when the KV pair has no fast CPU decode kernel here (kvq.KernelWarning).
	KVWarning    string  `json:"kv_warning,omitempty"`
	KVFits       bool    `json:"kv_fits,omitempty"`
	KVBudget     int64   `json:"kv_budget_bytes,omitempty"`
	BytesPerCell float64 `json:"kv_bytes_per_token,omitempty"`
	KVBytes      int64   `json:"kv_bytes,omitempty"`
	WeightBytes  int64   `json:"weight_bytes,omitempty"`
	WeightType   string  `json:"weight_type,omitempty"`
	Template     string  `json:"chat_template,omitempty"`
	Running      int64   `json:"generations_running,omitempty"`
	LoadMs       float64 `json:"load_ms,omitempty"`
}

// ABRequest starts a live A/B run (POST /api/ab, or a "start" message on /ws/lab): the prompt is
// prefilled into one cache per arm and into an f16 reference; then the reference's greedy
// continuation is fed to every arm one token at a time (teacher-forced), and each arm's
// next-token distribution is compared with the reference's.
type ABRequest struct {
	Model string `json:"model"`
	// Prompt is the text to start from (BOS is prepended; empty starts from BOS alone): the
	// reference's greedy continuation of it is fed to every cache.
	Prompt string `json:"prompt"`
	// Text, when set instead of Prompt, is a document whose own last N tokens are fed (as
	// `kvlab ab --text` does): the rest of it is the prompt.
	Text string `json:"text,omitempty"`
	// Arms are KV formats or K/V pairs ("f16", "q8_0/q4_0"), at least one and at most MaxArms.
	Arms []string `json:"arms"`
	// N is the number of decode positions compared (default 64).
	N int `json:"n"`
	// Window and Sinks size the FP16 overlay of every arm's cache; KGain is q2k's K gain.
	Window int     `json:"window,omitempty"`
	Sinks  int     `json:"sinks,omitempty"`
	KGain  float32 `json:"k_gain,omitempty"`
}

// Limits of an A/B request.
const (
	MaxArms  = 8
	DefaultN = 64
	MaxN     = 4096
)

// ABArmInfo describes an arm at the start of a run.
type ABArmInfo struct {
	Name string `json:"name"`
	// KVBytes is the arm's cache memory; BytesPerToken its KV cost of one token.
	KVBytes       int64   `json:"kv_bytes"`
	BytesPerToken float64 `json:"bytes_per_token"`
}

// ABStep is one compared position, streamed as it is computed.
type ABStep struct {
	// I is the position's index among the compared ones (0-based). Token is the token fed to
	// every cache after it (the reference's greedy pick, or the text's next token) and Text its
	// text; RefToken and RefText are the reference's own top-1.
	I        int         `json:"i"`
	Token    int32       `json:"token"`
	Text     string      `json:"text"`
	RefToken int32       `json:"ref_token"`
	RefText  string      `json:"ref_text"`
	Arms     []ABArmStep `json:"arms"`
}

// ABArmStep is one arm at one position.
type ABArmStep struct {
	// Token is the arm's own top-1 token and Text its text; Top1 reports it equals the
	// reference's.
	Token int32  `json:"token"`
	Text  string `json:"text"`
	Top1  bool   `json:"top1"`
	// KL is KL(reference ‖ arm) in nats at this position; MeanKL and Top1Rate run over every
	// position so far.
	KL       float64 `json:"kl"`
	MeanKL   float64 `json:"mean_kl"`
	Top1Rate float64 `json:"top1_rate"`
	// TPS is the arm's decode speed so far (tokens/s).
	TPS float64 `json:"tps"`
}

// Run is one stored A/B run (GET /api/runs/:id).
type Run struct {
	ID      string `json:"id"`
	Created string `json:"created"` // RFC 3339
	Kind    string `json:"kind"`    // "ab"
	// Status is "complete", "running" (or killed while running) or "failed" (Error says why).
	Status string `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
	// Source says what started it: "server" (the lab page or /api/ab) or "cli".
	Source    string `json:"source"`
	Model     string `json:"model"`
	ModelPath string `json:"model_path,omitempty"`
	Prompt    string `json:"prompt,omitempty"`
	// Mode is "continue" (the reference's greedy continuation of Prompt is fed) or "text" (the
	// text's own tokens are).
	Mode         string  `json:"mode,omitempty"`
	PromptTokens int     `json:"prompt_tokens"`
	N            int     `json:"n"`
	Tokens       int     `json:"tokens"`
	Stopped      bool    `json:"stopped,omitempty"`
	Window       int     `json:"window,omitempty"`
	Sinks        int     `json:"sinks,omitempty"`
	KGain        float32 `json:"k_gain,omitempty"`
	Machine      string  `json:"machine,omitempty"`
	// Device is where the compared runs computed ("cpu", "cuda: " and the GPU's name).
	Device string `json:"device,omitempty"`
	// Text is what was fed after the prompt; RefText the reference's own top-1 tokens.
	Text    string   `json:"text,omitempty"`
	RefText string   `json:"ref_text,omitempty"`
	Arms    []RunArm `json:"arms"`
	// KVFormats is the KV format version the run's pair names had when it was measured
	// (kvq.FormatVersion; 1: before rotation became the default). Names are given as today.
	KVFormats int `json:"kv_formats,omitempty"`
	// Report is the run as the run history stores it (the document `kvlab runs show` prints).
	Report *report.ABReport `json:"report,omitempty"`
}

// RunArm is one arm's summary in a run.
type RunArm struct {
	Name          string  `json:"name"`
	MeanKL        float64 `json:"mean_kl"`
	P99KL         float64 `json:"p99_kl"`
	MaxKL         float64 `json:"max_kl"`
	Top1          float64 `json:"top1"`
	PrefillTPS    float64 `json:"prefill_tps"`
	DecodeTPS     float64 `json:"decode_tps"`
	KVBytes       int64   `json:"kv_bytes"`
	BytesPerToken float64 `json:"bytes_per_token"`
	// Text is the arm's own top-1 tokens, teacher-forced.
	Text string `json:"text,omitempty"`
	// The prompt's mean KL, the text's perplexity and the mean attention-output error (live runs
	// measure them too, over their one prompt + continuation chunk), and the needles found
	// (measured only by `kvlab ab`; live runs skip them).
	PromptKL    float64 `json:"prompt_kl,omitempty"`
	PPL         float64 `json:"ppl,omitempty"`
	AttnErrMean float64 `json:"attn_err_mean,omitempty"`
	NeedleOK    int     `json:"needle_ok,omitempty"`
	NeedleTotal int     `json:"needle_total,omitempty"`
	// KL is the per-position KL series (for the chart).
	KL []float64 `json:"kl,omitempty"`
}
