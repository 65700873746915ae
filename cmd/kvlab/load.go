package main

import (
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// loadModel opens a GGUF model and its tokenizer. The caller closes the model; on error
// nothing is left open.
func loadModel(path string, opts model.Options) (*model.Model, *tokenizer.Tokenizer, error) {
	m, err := model.Load(path, opts)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, tok, nil
}
