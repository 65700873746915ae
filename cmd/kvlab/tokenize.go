package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/kvlab/kvlab/native/hf"
	"github.com/kvlab/kvlab/native/tokenizer"
	"github.com/spf13/cobra"
)

// tokenRow is one token of `kvlab tokenize`: its id, vocabulary text, decoded bytes and type.
type tokenRow struct {
	ID    int32  `json:"id"`
	Text  string `json:"text"`
	Piece string `json:"piece"`
	Bytes int    `json:"bytes"`
	Type  string `json:"type"`
}

func newTokenizeCmd() *cobra.Command {
	var (
		model                        string
		idsOnly, asJSON, noBOS, spec bool
	)
	cmd := &cobra.Command{
		Use:   "tokenize",
		Short: "Tokenize text from stdin with a GGUF model's tokenizer",
		Long: `Read text on stdin and print its tokens as the model's tokenizer (SPM or byte-level BPE, built
from the GGUF metadata exactly as llama.cpp builds it) produces them. Vocab-only GGUF files work.

The text is used byte for byte, a final newline included (use printf, or echo -n, to leave it
out). BOS is prepended when the model asks for it unless --no-bos is given; --special parses
control-token texts such as <s> or <|im_start|> in the input as those tokens.

The default output is a table of id, token text and the byte length of the text the token
stands for; --ids prints only the ids, space-separated; --json prints one document.`,
		Example: "  printf 'Once upon a time' | kvlab tokenize --model stories260K.gguf\n" +
			"  kvlab tokenize --model model.gguf --ids --no-bos < prompt.txt",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" {
				return errors.New("--model FILE.gguf is required")
			}
			tok, err := loadTokenizer(model)
			if err != nil {
				return err
			}
			text, err := io.ReadAll(cmd.InOrStdin())
			if err != nil {
				return fmt.Errorf("reading stdin: %w", err)
			}
			ids := tok.Encode(string(text), !noBOS, spec)
			rows := make([]tokenRow, len(ids))
			for i, id := range ids {
				p := tok.Piece(id, true)
				rows[i] = tokenRow{ID: id, Text: tok.TokenText(id), Piece: p, Bytes: len(p), Type: tok.TokenType(id).String()}
			}
			w := cmd.OutOrStdout()
			switch {
			case asJSON:
				idList := ids
				if idList == nil {
					idList = []int32{}
				}
				return writeJSON(w, map[string]any{
					"model": model, "tokenizer": tok.Kind().String(), "pre": tok.Pre(),
					"vocab_size": tok.VocabSize(), "count": len(ids), "ids": idList, "tokens": rows,
				})
			case idsOnly:
				s := make([]string, len(ids))
				for i, id := range ids {
					s[i] = strconv.Itoa(int(id))
				}
				_, err := fmt.Fprintln(w, strings.Join(s, " "))
				return err
			}
			t := &table{header: []string{"id", "token", "bytes"}, left: map[int]bool{1: true}}
			for _, r := range rows {
				t.add(strconv.Itoa(int(r.ID)), printable(r.Text), strconv.Itoa(r.Bytes))
			}
			if err := t.write(w); err != nil {
				return err
			}
			_, err = fmt.Fprintf(w, "\n%d tokens for %d bytes (%s tokenizer, %d-token vocabulary)\n",
				len(ids), len(text), tok.Kind(), tok.VocabSize())
			return err
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "GGUF file whose tokenizer to use (vocab-only files work)")
	cmd.Flags().BoolVar(&idsOnly, "ids", false, "print only the ids, space-separated")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	cmd.Flags().BoolVar(&noBOS, "no-bos", false, "do not add BOS/EOS even when the model asks for them")
	cmd.Flags().BoolVar(&spec, "special", false, "parse control-token texts (<s>, <|im_start|>, …) in the input")
	return cmd
}

// loadTokenizer reads the tokenizer of the GGUF file at path.
func loadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	f, err := hf.OpenModel(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if errors.Is(err, tokenizer.ErrNoTokenizer) {
		return nil, fmt.Errorf("%s: the file has no tokenizer (%s is missing or \"none\")", path, tokenizer.KeyModel)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tok, nil
}

// printable returns s as it is when every character prints on one line, else quoted with Go
// escapes.
func printable(s string) string {
	for _, r := range s {
		if r == unicode.ReplacementChar || (!unicode.IsPrint(r) && r != ' ') {
			return strconv.Quote(s)
		}
	}
	return s
}
