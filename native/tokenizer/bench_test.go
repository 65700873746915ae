package tokenizer_test

import (
	"strings"
	"testing"
)

// benchText is about 10 KB of mixed prose, code, numbers and non-Latin text.
var benchText = func() string {
	const para = "Once upon a time, there was a little girl named Lily. She loved to play outside " +
		"in the park! \"I've got 1234 apples,\" she said; they'd counted 56,789 of them.\n" +
		"func main() { fmt.Println(x[i] + 42) }  // 3.14159\n" +
		"Привет, мир. 中文文本 🦙 café naïve — ½ ²\n\n"
	var b strings.Builder
	for b.Len() < 10<<10 {
		b.WriteString(para)
	}
	return b.String()
}()

func BenchmarkEncode(b *testing.B) {
	for _, vocab := range []string{"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf"} {
		b.Run(strings.TrimSuffix(strings.TrimPrefix(vocab, "vocab/ggml-vocab-"), ".gguf"), func(b *testing.B) {
			tok := load(b, vocab)
			b.SetBytes(int64(len(benchText)))
			b.ReportAllocs()
			for b.Loop() {
				tok.Encode(benchText, true, true)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	tok := load(b, "vocab/ggml-vocab-gpt-2.gguf")
	ids := tok.Encode(benchText, false, false)
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		tok.Decode(ids)
	}
}
