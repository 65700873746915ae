package server

import (
	"github.com/kvlab/kvlab/native/grammar"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// jsonConstraint keeps a reply one JSON object (response_format json_object): a token is
// allowed when its text keeps the reply a prefix of a valid object; end-of-generation tokens
// only come by the object closing.
type jsonConstraint struct {
	g   *grammar.JSON
	tok *tokenizer.Tokenizer
}

func newJSONConstraint(tok *tokenizer.Tokenizer) *jsonConstraint {
	return &jsonConstraint{g: grammar.NewJSON(), tok: tok}
}

func (c *jsonConstraint) Allow(id int32) bool {
	if c.tok.IsEOG(id) {
		return false
	}
	return c.g.Allows(c.tok.Piece(id, false))
}

func (c *jsonConstraint) Accept(id int32) { c.g.Accept(c.tok.Piece(id, false)) }
func (c *jsonConstraint) Done() bool      { return c.g.Done() }
func (c *jsonConstraint) Close() string   { return c.g.Close() }
