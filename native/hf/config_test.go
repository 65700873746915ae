package hf

import (
	"math"
	"strings"
	"testing"
)

func metaOf(t *testing.T, cfg string) (map[string]any, []float32, error) {
	t.Helper()
	c, a, err := parseConfig([]byte(cfg))
	if err != nil {
		return nil, nil, err
	}
	kv, factors, err := c.metadata(a, "m")
	m := map[string]any{}
	for _, p := range kv {
		m[p.Key] = p.Value
	}
	return m, factors, err
}

const baseCfg = `"architectures":["LlamaForCausalLM"],"hidden_size":32,"num_hidden_layers":1,"intermediate_size":64,"num_attention_heads":4,"rope_theta":10000`

// TestConfigRopeScaling: config.json's rope_scaling becomes llama.cpp's keys, and llama-3
// scaling its rope_freqs factors (hand-computed for head dim 8, base 1e4, an original context
// of 1024, factor 8, low 1, high 4: wavelengths 2π, 20π, 200π, 2000π against 256 and 1024).
func TestConfigRopeScaling(t *testing.T) {
	_, f, err := metaOf(t, `{`+baseCfg+`,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":1024}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 1, 3.2396418468652604, 8}
	if len(f) != 4 {
		t.Fatalf("factors %v", f)
	}
	for i, w := range want {
		if math.Abs(float64(f[i])-w) > 1e-5 {
			t.Errorf("factor %d = %g, want %g", i, f[i], w)
		}
	}
	m, _, err := metaOf(t, `{`+baseCfg+`,"max_position_embeddings":131072,"rope_scaling":{"type":"yarn","factor":4,"original_max_position_embeddings":32768,"beta_fast":16}}`)
	if err != nil {
		t.Fatal(err)
	}
	if m["llama.rope.scaling.type"] != "yarn" || m["llama.rope.scaling.factor"] != float32(4) ||
		m["llama.rope.scaling.original_context_length"] != uint32(32768) || m["llama.rope.scaling.yarn_beta_fast"] != float32(16) ||
		m["llama.context_length"] != uint32(131072) {
		t.Errorf("yarn keys %v", m)
	}
	m, _, _ = metaOf(t, `{`+baseCfg+`,"rope_scaling":{"type":"linear","factor":2}}`)
	if m["llama.rope.scaling.type"] != "linear" || m["llama.rope.scaling.factor"] != float32(2) {
		t.Errorf("linear keys %v", m)
	}
	for _, tc := range []struct{ cfg, want string }{
		{`{` + baseCfg + `,"rope_scaling":{"type":"dynamic","factor":2}}`, "dynamic"},
		{`{` + baseCfg + `,"rope_scaling":{"type":"linear","factor":0}}`, "factor"},
		{`{` + baseCfg + `,"hidden_act":"gelu"}`, "hidden_act"},
		{`{` + baseCfg + `,"num_key_value_heads":3}`, "do not group"},
		{`{` + baseCfg + `,"head_dim":2000000}`, "head_dim"},
		{`{"architectures":["GemmaForCausalLM"]}`, "GemmaForCausalLM"},
	} {
		if _, _, err := metaOf(t, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.cfg, err, tc.want)
		}
	}
	// head_dim other than hidden/heads gives key_length and value_length.
	m, _, _ = metaOf(t, `{`+baseCfg+`,"head_dim":16}`)
	if m["llama.attention.key_length"] != uint32(16) || m["llama.rope.dimension_count"] != uint32(16) {
		t.Errorf("head_dim keys %v", m)
	}
}

// TestPermuteRows: the rotate-half → interleaved row order of one head of 4 rows is 0, 2, 1, 3.
func TestPermuteRows(t *testing.T) {
	data := []byte{0, 1, 2, 3, 10, 11, 12, 13} // two heads of four one-byte rows
	got, err := permuteRows("q", data, []uint64{8}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string([]byte{0, 2, 1, 3, 10, 12, 11, 13}) {
		t.Errorf("permuted %v", got)
	}
	if _, err := permuteRows("q", data, []uint64{8}, 3); err == nil {
		t.Error("8 rows into 3 heads: no error")
	}
}
