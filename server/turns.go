package server

import (
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/kvlab/kvlab/server/chattemplate"
)

// maxTurns is how many finished chat generations an engine remembers for the next turn.
const maxTurns = 64

// turn is a finished chat generation: the prompt's text and tokens and the reply's text (as the
// client got it) and the tokens the model generated for it.
type turn struct {
	// layout is where the prompt's template segments start and end (segmentLayout): a later
	// conversation matches only with the same markers at the same places, so that message text
	// that spells a marker never takes the tokens of a real one.
	layout       []int
	prompt       string
	promptTokens []int32
	reply        string
	replyTokens  []int32
}

// turnLog remembers recent chat generations so that the next turn of a conversation is
// tokenized as the earlier turns' tokens (the prompt as it was fed, the reply as the model
// generated it) followed by the new text only. Re-tokenizing the whole conversation instead
// gives different tokens at the reply's boundaries (a reply's leading space is trimmed, a
// template trims the content, BPE merges across the boundary) and inside it (a model need not
// generate the canonical tokenization), and the cache then matches only up to the first
// difference.
type turnLog struct {
	mu    sync.Mutex
	turns []turn
}

func (l *turnLog) add(t turn) {
	if t.prompt == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.turns) == maxTurns {
		l.turns = slices.Delete(l.turns, 0, 1)
	}
	l.turns = append(l.turns, t)
}

// match finds the longest remembered turn whose prompt and reply start text, and returns the
// tokens of that prefix and the offset in text where what follows it starts. Whitespace between
// the prompt and the reply and around the reply may differ (templates trim replies).
func (l *turnLog) match(text string, layout func(n int) []int) (prefix []int32, at int, ok bool) {
	var rest string
	l.mu.Lock()
	defer l.mu.Unlock()
	best := -1
	for i := len(l.turns) - 1; i >= 0; i-- {
		t := &l.turns[i]
		if !strings.HasPrefix(text, t.prompt) || !slices.Equal(layout(len(t.prompt)), t.layout) {
			continue
		}
		after := strings.TrimLeftFunc(text[len(t.prompt):], unicode.IsSpace)
		reply := strings.TrimSpace(t.reply)
		if !strings.HasPrefix(after, reply) {
			continue
		}
		r := after[len(reply):]
		if best < 0 || len(r) < len(rest) {
			best, rest = i, r
		}
	}
	if best < 0 {
		return nil, 0, false
	}
	t := &l.turns[best]
	prefix = append(slices.Clip(slices.Clone(t.promptTokens)), t.replyTokens...)
	return prefix, len(text) - len(rest), true
}

// segmentLayout lists the start and end offsets of the template segments within the first n
// bytes of a rendering.
func segmentLayout(segs []chattemplate.Segment, n int) []int {
	var out []int
	at := 0
	for _, sg := range segs {
		if at >= n {
			break
		}
		if sg.Template {
			out = append(out, at, min(at+len(sg.Text), n))
		}
		at += len(sg.Text)
	}
	return out
}
