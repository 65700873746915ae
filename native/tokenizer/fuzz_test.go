package tokenizer_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kvlab/kvlab/native/tokenizer"
)

// FuzzEncode feeds arbitrary bytes (ill-formed UTF-8 included) to the SPM and byte-level BPE
// test vocabularies. Encode must not panic and must return ids in range in every mode. For valid
// UTF-8, decoding must give the text back: Decode for SPM ("▁" in the input comes back as a
// space), and a Stream the same with the dummy-prefix space; the joined pieces for BPE.
// (Ill-formed bytes are not round-tripped: BPE turns them into U+FFFD, and SPM, which cuts
// symbols by lead byte as llama.cpp does, can swallow the first byte of a following "▁" into a
// byte token.)
func FuzzEncode(f *testing.F) {
	spm := load(f, "vocab/ggml-vocab-llama-spm.gguf")
	bpe := load(f, "vocab/ggml-vocab-gpt-2.gguf")
	for _, s := range []string{"", " ", "Hello world", "  \n\t x", "I've 'RE 3333 <s>x</s>", "🦙 ½ Führer", "\xff\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 256 {
			s = s[:256] // longer inputs find nothing new and make minimizing slow
		}
		for _, tok := range []*tokenizer.Tokenizer{spm, bpe} {
			for _, mode := range [][2]bool{{false, false}, {true, true}, {false, true}} {
				for _, id := range tok.Encode(s, mode[0], mode[1]) {
					if id < 0 || int(id) >= tok.VocabSize() {
						t.Fatalf("%v: id %d out of range for %q", tok.Kind(), id, s)
					}
				}
			}
		}

		if !utf8.ValidString(s) {
			return
		}
		ids := spm.Encode(s, false, false)
		if got, want := spm.Decode(ids), strings.ReplaceAll(s, "▁", " "); got != want {
			t.Errorf("SPM: Decode(Encode(%q)) = %q, want %q", s, got, want)
		}
		stream := spm.NewStream(false)
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(stream.Add(id))
		}
		b.WriteString(stream.Flush())
		if want := " " + strings.ReplaceAll(s, "▁", " "); s != "" && b.String() != want {
			t.Errorf("SPM stream of %q = %q, want %q", s, b.String(), want)
		}

		var joined strings.Builder
		for _, id := range bpe.Encode(s, false, false) {
			joined.WriteString(bpe.Piece(id, false))
		}
		if joined.String() != s {
			t.Errorf("BPE: pieces of %q join to %q", s, joined.String())
		}
	})
}
