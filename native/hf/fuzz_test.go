package hf

import (
	"encoding/binary"
	"testing"
)

func withLen(hdr string, data int) []byte {
	b := make([]byte, 8, 8+len(hdr)+data)
	binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
	b = append(b, hdr...)
	return append(b, make([]byte, data)...)
}

// FuzzSafetensorsHeader: any bytes parse to tensors whose ranges lie inside the data section
// and agree with their dtype and shape, or to an error; never a panic.
func FuzzSafetensorsHeader(f *testing.F) {
	f.Add(withLen(`{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}`, 16))
	f.Add(withLen(`{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,6]},"b":{"dtype":"F16","shape":[],"data_offsets":[6,8]}}`, 8))
	f.Add(withLen(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[8,4]}}`, 16))
	f.Add(withLen(`{"a":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}}  `, 2))
	f.Add([]byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"))
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sh, err := parseShard("f", b)
		if err != nil {
			return
		}
		for _, x := range sh.tensors {
			if x.Begin > x.End || x.End > uint64(len(sh.data)) {
				t.Fatalf("tensor %q: [%d, %d) outside %d bytes", x.Name, x.Begin, x.End, len(sh.data))
			}
			_ = sh.data[x.Begin:x.End]
		}
	})
}

// FuzzConfigAndTokenizer: config.json and tokenizer.json convert or fail; never a panic.
func FuzzConfigAndTokenizer(f *testing.F) {
	f.Add([]byte(`{"architectures":["LlamaForCausalLM"],"hidden_size":8,"num_hidden_layers":1,"intermediate_size":8,"num_attention_heads":2,"rope_scaling":{"rope_type":"llama3","factor":8,"original_max_position_embeddings":64}}`),
		[]byte(`{"added_tokens":[{"id":0,"content":"<unk>","special":true}],"normalizer":{"type":"Prepend","prepend":"▁"},"model":{"type":"BPE","vocab":{"<unk>":0,"a":1,"b":2,"ab":3,"<0x41>":4},"merges":["a b"],"byte_fallback":true,"unk_token":"<unk>"}}`),
		[]byte(`{"bos_token":{"content":"a"},"add_bos_token":true,"chat_template":[{"name":"default","template":"x"}]}`))
	f.Add([]byte(`{"architectures":["Qwen2ForCausalLM"],"hidden_size":8,"num_hidden_layers":1,"intermediate_size":8,"num_attention_heads":2,"num_key_value_heads":1,"rope_scaling":{"type":"yarn","factor":4,"original_max_position_embeddings":32768}}`),
		[]byte(`{"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"x"}},{"type":"ByteLevel","use_regex":false}]},"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]}}`),
		[]byte(`{}`))
	f.Fuzz(func(t *testing.T, cfgJSON, tokJSON, tokCfg []byte) {
		c, a, err := parseConfig(cfgJSON)
		if err == nil {
			c.metadata(a, "x")
		}
		tokenizerMetadata(tokJSON, tokCfg, c, 16)
	})
}
