package planview

import (
	"encoding/xml"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/plan/calc"
)

// wellFormed reports whether the fragment parses as XML: every element closed, every attribute
// quoted, every & escaped.
func wellFormed(t *testing.T, fragment string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader("<div>" + fragment + "</div>"))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("fragment is not well-formed: %v", err)
		}
	}
}

func TestComputeMatchesPlanner(t *testing.T) {
	got, err := Compute(url.Values{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := calc.LookupPreset(DefaultPreset)
	h, _ := calc.LookupHardware(DefaultGPU)
	want, err := calc.Plan(calc.NewRequest(m.Shape, m.Quant, h))
	if err != nil {
		t.Fatal(err)
	}
	if got.Report.Policy.Reason != want.Policy.Reason || len(got.Report.Rows) != len(want.Rows) {
		t.Fatalf("defaults differ from the planner's: %q vs %q", got.Report.Policy.Reason, want.Policy.Reason)
	}
	for i := range want.Rows {
		if got.Report.Rows[i].Text() != want.Rows[i].Text() {
			t.Errorf("row %d: %+v, want %+v", i, got.Report.Rows[i].Text(), want.Rows[i].Text())
		}
	}
	v := url.Values{FieldPreset: {"qwen2.5-14b-1m"}, FieldCtx: {"32k"}, FieldBudgetGiB: {"2.6640625"}, FieldFormats: {"f16", "q8_0,q8_0/q4_0"}}
	res, err := Compute(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Policy.Reason != "q8_0/q4_0: KV 2496 MiB fits budget 2728 MiB" || len(res.Report.Rows) != 3 {
		t.Errorf("got %q with %d rows", res.Report.Policy.Reason, len(res.Report.Rows))
	}
	html := Render(res)
	wellFormed(t, html)
	for _, want := range []string{`id="policy-reason" class="note">q8_0/q4_0: KV 2496 MiB fits budget 2728 MiB<`, `id="answer-fits" data-value="true"`, `data-format="q8_0/q4_0" class="chosen"`,
		`data-k="max_resident_ctx" data-value="35813"`, `id="kib-chart"`, `id="spill-chart"`, `<polyline`, `class="limit"`} {
		if !strings.Contains(html, want) {
			t.Errorf("render lacks %s", want)
		}
	}
}

func TestComputeFields(t *testing.T) {
	custom := url.Values{FieldPreset: {CustomPreset}, FieldLayers: {"24"}, FieldKVHeads: {"4"}, FieldHeadDim: {"64"},
		FieldSWA: {"512"}, FieldGlobalEvery: {"6"}, FieldParamsB: {"1.5"}, FieldGPU: {"rtx-4090"}, FieldGPUs: {"2"},
		FieldWindow: {"128"}, FieldSinks: {"8"}, FieldKV: {"q4_0"}, FieldSessions: {"3"}, FieldOverheadMs: {"2"}}
	res, err := Compute(custom, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if r.Class != calc.ClassSliding.String() || r.GPUs != 2 || r.Sessions != 3 || r.Overlay.Window != 128 ||
		r.Policy.Format != "q4_0/q4_0" || !r.Policy.UserChosen || r.Spill.OverheadMs != 2 {
		t.Errorf("custom request not honoured: %+v", r)
	}
	// 4 of 24 layers are global: 4 layers × 2 heads per GPU × (64+64) × 2 bytes = 2 KiB/token f16.
	if r.Rows[0].KiBPerToken != 2 {
		t.Errorf("custom f16 growth %g KiB/token, want 2", r.Rows[0].KiBPerToken)
	}
	pts := "format,ctx,resident_cells,tokens_per_s\nf16,32768,0,40\nf16,65536,40000,10\nq8_0,65536,0,45\n"
	res, err = Compute(url.Values{FieldPoints: {pts}}, nil)
	if err != nil || res.Fit == nil || res.Report.Spill != res.Fit.Params {
		t.Fatalf("fit not applied: %v", err)
	}
	wellFormed(t, Render(res))

	file := calc.Shape{Name: `<script>alert("x")</script>`, Groups: []calc.LayerGroup{{Count: 2, Kind: calc.Full, KVHeads: 1, HeadDimK: 64, HeadDimV: 64}}, WeightBytes: 1 << 20}
	res, err = Compute(url.Values{FieldPreset: {"file:evil"}}, map[string]calc.Shape{"file:evil": file})
	if err != nil {
		t.Fatal(err)
	}
	html := Render(res)
	if strings.Contains(html, "<script>") || !strings.Contains(html, "&lt;script&gt;") {
		t.Error("a model name from a file is not escaped")
	}
	wellFormed(t, html)
}

func TestComputeErrors(t *testing.T) {
	for _, tc := range []struct {
		v    url.Values
		says string
	}{
		{url.Values{FieldCtx: {"-5"}}, "ctx: "},
		{url.Values{FieldCtx: {"abc"}}, `ctx: bad planner input: "abc" is not a token count`},
		{url.Values{FieldGPUs: {"0"}}, "gpus: bad planner input: 0 is below 1"},
		{url.Values{FieldPreset: {"nope"}}, `preset: unknown preset: model "nope"`},
		{url.Values{FieldGPU: {"nope"}}, `gpu: unknown preset: GPU "nope"`},
		{url.Values{FieldFormats: {"q9"}}, `formats: unknown KV format "q9"`},
		{url.Values{FieldKV: {"f16/q2k"}}, "kv: "},
		{url.Values{FieldBudgetGiB: {"NaN"}}, "budget_gib: "},
		{url.Values{FieldPreset: {CustomPreset}}, "custom shape needs"},
		{url.Values{FieldPreset: {"file:gone.gguf"}}, "drop it on the page again"},
		{url.Values{FieldPoints: {"f16,1,0"}}, "points: spill fit: measurement line 1"},
		{url.Values{"bogus": {"1"}}, `unknown field "bogus"`},
	} {
		_, err := Compute(tc.v, nil)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: error %v, want one saying %q", tc.v, err, tc.says)
		}
		wellFormed(t, RenderError(err))
	}
	if _, err := Compute(url.Values{FieldCtx: {"-5"}}, nil); !errors.Is(err, calc.ErrBadInput) {
		t.Errorf("negative ctx: %v is not ErrBadInput", err)
	}
}

func TestCalibrationRenders(t *testing.T) {
	html := Calibration()
	wellFormed(t, html)
	if !strings.Contains(html, "RMS log error") || !strings.Contains(html, "not fitted: an older quantized decode reader") {
		t.Errorf("calibration: %s", html)
	}
}

func TestRenderHasLaunchCommands(t *testing.T) {
	res, err := Compute(url.Values{FieldPreset: {"llama-3.1-8b"}, FieldGPU: {"rtx-4090"}, FieldCtx: {"131072"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	html := Render(res)
	wellFormed(t, html)
	for _, want := range []string{`class="mem-bar" data-format="f16"`, `id="memory-chart"`, `id="launch-toggle"`, `id="launch" hidden="hidden"`, "llama-server -m Llama-3.1-8B-Q4_K_M.gguf -c 131072",
		"vllm serve ./Llama-3.1-8B-Q4_K_M.gguf --tokenizer meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072"} {
		if !strings.Contains(html, want) {
			t.Errorf("rendered plan lacks %q", want)
		}
	}
}
