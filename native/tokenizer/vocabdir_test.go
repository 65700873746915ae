package tokenizer_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// EnvVocabDir names a directory of llama.cpp tokenizer test vectors (its models/ folder:
// ggml-vocab-NAME.gguf next to ggml-vocab-NAME.gguf.inp and .out). TestVocabDir runs every
// complete triple it finds there; it skips when the variable is unset.
const EnvVocabDir = "KVLAB_VOCAB_DIR"

// TestVocabDir checks every vocab of $KVLAB_VOCAB_DIR the package builds against its vectors
// (addSpecial false, parseSpecial false, as test-tokenizer-0 runs them). A vocab whose
// tokenizer model this package does not build (WPM, UGM, …) is logged and skipped; a
// pre-tokenizer it does not know fails, so that a new vector file is not passed over silently.
func TestVocabDir(t *testing.T) {
	dir := os.Getenv(EnvVocabDir)
	if dir == "" {
		t.Skipf("%s is not set", EnvVocabDir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "ggml-vocab-*.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	ran := 0
	for _, path := range files {
		if _, err := os.Stat(path + ".inp"); err != nil {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "ggml-vocab-"), ".gguf")
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tok, err := tokenizer.FromGGUF(f)
			if err != nil {
				model, _ := f.String(tokenizer.KeyModel)
				if errors.Is(err, tokenizer.ErrUnsupported) && model != "llama" && model != "gpt2" {
					t.Skipf("tokenizer model %q is not built: %v", model, err)
				}
				t.Fatal(err)
			}
			ran++
			cases := readVectorFiles(t, path)
			pass := 0
			for i, c := range cases {
				got := tok.Encode(c.text, false, false)
				if slices.Equal(got, c.want) {
					pass++
					continue
				}
				t.Errorf("case %d %q:\n got %v\nwant %v", i, c.text, got, c.want)
			}
			t.Logf("%s (pre %q): %d/%d cases match", name, tok.Pre(), pass, len(cases))
		})
	}
	if ran == 0 {
		t.Logf("no vocab with vectors in %s", dir)
	}
}
