package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

var validDocs = []string{
	`{}`, ` { } `[:4], `{"a":1}`, `{"a": -0.5e+10, "b": [true, false, null, "x\n\u00e9\"", {}], "c": {"d": []}}`,
	"{\n  \"name\": \"kvlab\",\n  \"n\": 12,\n  \"list\": [1, 2.25, -3E2]\n}", `{"":""}`, `{"é":"ü"}`,
}

func TestJSONAcceptsValidObjects(t *testing.T) {
	for _, doc := range validDocs {
		j := NewJSON()
		for i := 0; i < len(doc); i++ {
			if !j.Accept(doc[i : i+1]) {
				t.Fatalf("%q: byte %d (%q) rejected", doc, i, doc[i])
			}
			// Every prefix closes to a document that parses.
			if closed := doc[:i+1] + j.Close(); !json.Valid([]byte(closed)) {
				t.Fatalf("%q: prefix %q closes to %q, which does not parse", doc, doc[:i+1], closed)
			}
		}
		if !j.Done() {
			t.Errorf("%q: not done", doc)
		}
		if j.Allows(" ") || j.Allows("x") {
			t.Errorf("%q: accepts text after the object", doc)
		}
	}
}

func TestJSONRejects(t *testing.T) {
	for _, doc := range []string{`[]`, `"x"`, `1`, `{a:1}`, `{"a" 1}`, `{"a":01}`, `{"a":1,}`, `{"a":tru}`, `{"a":"` + "\x01" + `"}`,
		`{"a":1]`, `{"a":[1}`, `{"a":.5}`, `{"a":1.}`, `{"a":"\x"}`, `{"a":"\u12g4"}`, `{}{}`, `{"a":-}`} {
		j := NewJSON()
		ok := true
		for i := 0; i < len(doc) && ok; i++ {
			ok = j.Accept(doc[i : i+1])
		}
		if ok && j.Done() {
			t.Errorf("%q accepted", doc)
		}
	}
}

func TestJSONWholeTokens(t *testing.T) {
	j := NewJSON()
	for _, tok := range []string{" {", `"key`, `":`, ` [1`, `, 2`, `], "b": tr`, `ue}`} {
		if !j.Allows(tok) {
			t.Fatalf("%q not allowed", tok)
		}
		if !j.Accept(tok) {
			t.Fatalf("%q rejected", tok)
		}
	}
	if !j.Done() {
		t.Fatal("not done")
	}
	j = NewJSON()
	if j.Accept(`{"a":1}}`) {
		t.Error("a token past the end accepted")
	}
	if !j.Accept(`{"a"`) || j.Close() != ":null}" {
		t.Errorf("close %q", j.Close())
	}
}

// TestJSONRandomWalk samples random byte strings the recogniser allows and checks that each
// closes to a document that parses: what constrained sampling relies on.
func TestJSONRandomWalk(t *testing.T) {
	alphabet := []string{"{", "}", "[", "]", `"`, ":", ",", " ", "\n", "a", "é", "0", "1", "9", "-", "+", ".", "e", "E",
		"true", "false", "null", `\`, "n", "u", "f", "\t", `{"k":`, `"v"`, "12.5", "]}", "x"}
	r := rand.New(rand.NewPCG(1, 2))
	for walk := 0; walk < 2000; walk++ {
		j := NewJSON()
		out := ""
		for step := 0; step < 60 && !j.Done(); step++ {
			tok := alphabet[r.IntN(len(alphabet))]
			if j.Accept(tok) {
				out += tok
			}
		}
		closed := out + j.Close()
		var v map[string]any
		if err := json.Unmarshal([]byte(closed), &v); err != nil {
			t.Fatalf("walk %d: %q closes to %q: %v", walk, out, closed, err)
		}
	}
}
