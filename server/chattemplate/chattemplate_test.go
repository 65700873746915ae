package chattemplate

import "testing"

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl string
		want       Kind
	}{
		{"none", "", Plain},
		{"llama2", "{% if messages[0]['role'] == 'system' %}{{ bos_token + '[INST] ' + content + ' [/INST]' }}", Llama2},
		{"mistral", "{{ '[INST] ' + message['content'] + ' [/INST]' }}", Llama2},
		{"chatml", "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}", ChatML},
		{"llama3", "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' %}", Llama3},
		{"gemma", "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}", Gemma},
		{"unknown jinja", "{{ messages | join }}", Plain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Detect(tc.tmpl); got != tc.want {
				t.Errorf("Detect = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRender(t *testing.T) {
	conv := []Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hi"},
		{Role: "assistant", Content: "Hello."},
		{Role: "user", Content: "Why?"},
	}
	for _, tc := range []struct {
		kind Kind
		msgs []Message
		want string
	}{
		{ChatML, conv, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n"},
		{Llama3, conv, "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhy?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{Llama2, conv, "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] Why? [/INST]"},
		{Gemma, conv, "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>user\nWhy?<end_of_turn>\n<start_of_turn>model\n"},
		{Plain, conv, "Be brief.\n\nHi Hello.\nWhy?"},
		{Plain, []Message{{Role: "user", Content: "Once upon a time"}, {Role: "assistant", Content: ", there was"}, {Role: "user", Content: "A dog."}}, "Once upon a time, there was\nA dog."},
		{Plain, []Message{{Role: "user", Content: "Once upon a time"}}, "Once upon a time"},
		{ChatML, []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hel"}}, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHel"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			got, err := Render(tc.kind, tc.msgs)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Render =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for name, msgs := range map[string][]Message{
		"empty":        nil,
		"unknown role": {{Role: "tool", Content: "x"}},
		"late system":  {{Role: "user", Content: "x"}, {Role: "system", Content: "y"}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Render(ChatML, msgs); err == nil {
				t.Error("no error")
			}
		})
	}
}
