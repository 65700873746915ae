package chattemplate

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/ardanlabs/jinja"
)

// This file runs a model's own Jinja chat template (tokenizer.chat_template) with
// github.com/ardanlabs/jinja, which applies Hugging Face's trim_blocks and lstrip_blocks.
//
// The template must never see a message's text as something that can become template text:
// the tokenizer parses special tokens in template segments only, so a segment boundary in the
// wrong place would let a user forge a turn. A conversation is therefore rendered twice:
//
//  1. with every message's content replaced by a placeholder (a random nonce and the message's
//     index, letters and digits only). The text around the placeholders is the template's
//     own: it depends on the roles, the number of messages and the template, never on the
//     contents. These are the template segments, exactly as rendered.
//  2. with the real contents, to learn what the template did with each content (kept as is,
//     trimmed, stripped on one side, cut after a reasoning block): the content segment at each
//     placeholder is the first such variant of the message's text for which the template
//     segments and the variants rebuild the real rendering exactly.
//
// When no variant rebuilds it (the template transforms content some other way, or branches on
// it), the contents go in unchanged between the same template segments. Either way the
// template segments come from the first rendering, so message text is never parsed for
// special tokens.

// Bounds on a template from a file.
const (
	// MaxTemplateBytes is the longest tokenizer.chat_template Compile accepts. The templates of
	// current models, tool calling included, are well under 64 KiB.
	MaxTemplateBytes = 256 << 10
	// DefaultTimeout bounds one rendering (both passes).
	DefaultTimeout = 5 * time.Second
	// maxRange is the most items the template's range() may make.
	maxRange = 1 << 16
	// maxOutputSlack is how much longer than the conversation's text a rendering may be.
	maxOutputSlack = 1 << 20
	// maxAlignSteps bounds the search for the content variants.
	maxAlignSteps = 1 << 14
)

// Errors of Jinja templates, matched with errors.Is.
var (
	// ErrTemplate means the template cannot be used: it does not compile, is too large, or
	// fails on an ordinary conversation.
	ErrTemplate = errors.New("chattemplate: unusable chat template")
	// ErrRender means a rendering failed: the template ran too long, wrote too much, or failed.
	ErrRender = errors.New("chattemplate: the chat template failed")
)

// RaiseError is the template's own refusal of a conversation (raise_exception), such as
// "Conversation roles must alternate user/assistant/user/assistant/...".
type RaiseError struct{ Message string }

func (e *RaiseError) Error() string {
	return "chattemplate: the model's chat template refuses the conversation: " + e.Message
}

// Options are what a template is rendered with besides the messages.
type Options struct {
	// BOS and EOS are the vocabulary's token texts, given to the template as bos_token and
	// eos_token.
	BOS, EOS string
	// AddBOS says that the tokenizer prepends BOS itself: a rendering that starts with the BOS
	// text loses it, so the prompt does not hold two (as llama.cpp does).
	AddBOS bool
	// Timeout bounds one rendering; 0 is DefaultTimeout. A template that runs past it is
	// disabled and the conversation rendered in its built-in format (Kind) from then on.
	Timeout time.Duration
}

// Jinja is a compiled chat template. It is safe for concurrent use.
type Jinja struct {
	tmpl     *jinja.Template
	kind     Kind
	opt      Options
	disabled atomic.Bool
}

// Kind returns the built-in format whose markers the template writes (Detect): its stop
// strings, and the format used once the template is disabled.
func (j *Jinja) Kind() Kind { return j.kind }

// Name returns "jinja" and the format Detect sees in it, e.g. "jinja (chatml)".
func (j *Jinja) Name() string {
	if j.disabled.Load() {
		return string(j.kind) + " (the chat template was disabled)"
	}
	return "jinja (" + string(j.kind) + ")"
}

// Compile compiles a tokenizer.chat_template and checks that it renders an ordinary
// conversation (with and without a system message, or a single user message) within the
// bounds. It fails with
// ErrTemplate, saying why; the caller then falls back to the built-in format of
// Detect(src).
func Compile(src string, opt Options) (*Jinja, error) {
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if len(src) > MaxTemplateBytes {
		return nil, fmt.Errorf("%w: it is %d bytes, more than %d", ErrTemplate, len(src), MaxTemplateBytes)
	}
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("%w: it is empty", ErrTemplate)
	}
	guarded, err := prepare(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTemplate, err)
	}
	var tmpl *jinja.Template
	err = guard(func() (err error) {
		tmpl, err = jinja.Compile(guarded)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTemplate, err)
	}
	j := &Jinja{tmpl: tmpl, kind: Detect(src), opt: opt}
	probes := [][]Message{
		{{Role: RoleSystem, Content: "You are a helpful assistant."}, {Role: RoleUser, Content: "Hello"},
			{Role: RoleAssistant, Content: "Hi there."}, {Role: RoleUser, Content: "Tell me more."}},
		{{Role: RoleUser, Content: "Hello"}, {Role: RoleAssistant, Content: "Hi there."}, {Role: RoleUser, Content: "Tell me more."}},
		{{Role: RoleUser, Content: "Hello"}},
	}
	var firstErr error
	for _, msgs := range probes {
		_, err := j.render(msgs)
		if err == nil {
			return j, nil
		}
		var raise *RaiseError
		if !errors.As(err, &raise) {
			return nil, fmt.Errorf("%w: %v", ErrTemplate, err)
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("%w: %v", ErrTemplate, firstErr)
}

// segments renders msgs (validated) as template and content segments.
func (j *Jinja) segments(msgs []Message) ([]Segment, error) {
	if j.disabled.Load() {
		return j.kind.segments(msgs)
	}
	return j.render(msgs)
}

func (j *Jinja) render(msgs []Message) ([]Segment, error) {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	mark := "KVLABMSG" + strings.ToUpper(hex.EncodeToString(nonce[:])) + "N"
	cont := msgs[len(msgs)-1].Role == RoleAssistant
	marked := make([]Message, len(msgs))
	size := 0
	for i, m := range msgs {
		marked[i] = m
		if m.Content != "" {
			marked[i].Content = mark + strconv.Itoa(i) + "X"
		}
		size += len(m.Content)
	}
	limit := maxOutputSlack + 8*size

	var layout, real string
	done := make(chan error, 1)
	go func() {
		done <- guard(func() error {
			var err error
			if layout, err = j.exec(marked, !cont, limit); err != nil {
				return err
			}
			real, err = j.exec(msgs, !cont, limit)
			return err
		})
	}()
	timer := time.NewTimer(j.opt.Timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
	case <-timer.C:
		// The goroutine cannot be stopped; the template is not run again.
		j.disabled.Store(true)
		return nil, fmt.Errorf("%w: it ran longer than %v and is disabled; conversations now use the built-in %s format",
			ErrRender, j.opt.Timeout, j.kind)
	}

	tmpl, slots := splitMarks(layout, mark, len(msgs))
	if cont {
		// Continue the assistant's message: drop what the template writes after its content.
		last := len(msgs) - 1
		for k := len(slots) - 1; k >= 0; k-- {
			if slots[k] == last {
				tmpl, slots = tmpl[:k+2], slots[:k+1]
				tmpl[k+1] = ""
				break
			}
		}
	}
	if j.opt.AddBOS && j.opt.BOS != "" && strings.HasPrefix(tmpl[0], j.opt.BOS) {
		tmpl[0] = tmpl[0][len(j.opt.BOS):]
		real = strings.TrimPrefix(real, j.opt.BOS)
	}
	texts := align(real, tmpl, slots, msgs, cont)
	var b segments
	b.tmpl(tmpl[0])
	for k := range slots {
		b.user(texts[k])
		b.tmpl(tmpl[k+1])
	}
	return b, nil
}

// exec runs the template once.
func (j *Jinja) exec(msgs []Message, addGenerationPrompt bool, limit int) (string, error) {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	depth := jinja.NewDict()
	depth.AsDict().Set("d", jinja.NewInt(0))
	data := map[string]jinja.Value{
		guardName:               depth,
		"messages":              jinja.FromGoValue(list),
		"add_generation_prompt": jinja.NewBool(addGenerationPrompt),
		"bos_token":             jinja.NewString(j.opt.BOS),
		"eos_token":             jinja.NewString(j.opt.EOS),
		"raise_exception":       jinja.NewCallable("raise_exception", raiseException),
		"range":                 jinja.NewCallable("range", boundedRange),
	}
	out, err := j.tmpl.RenderValues(data)
	if err != nil {
		var raise *RaiseError
		if errors.As(err, &raise) {
			return "", raise
		}
		return "", fmt.Errorf("%w: %v", ErrRender, err)
	}
	if len(out) > limit {
		return "", fmt.Errorf("%w: it wrote %d bytes, more than %d", ErrRender, len(out), limit)
	}
	return out, nil
}

// guard runs f and turns a panic into an error.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrRender, r)
		}
	}()
	return f()
}

func raiseException(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	msg := "(no message)"
	if len(args) > 0 {
		if args[0].IsString() {
			msg = args[0].AsString()
		} else {
			msg = args[0].String()
		}
	}
	return jinja.Undefined(), &RaiseError{Message: msg}
}

// boundedRange is Python's range with at most maxRange items.
func boundedRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	nums := make([]int64, len(args))
	for i, a := range args {
		if !a.IsInt() {
			return jinja.Undefined(), fmt.Errorf("range: argument %d is not an integer", i+1)
		}
		nums[i] = a.AsInt()
	}
	var start, stop, step int64 = 0, 0, 1
	switch len(nums) {
	case 1:
		stop = nums[0]
	case 2:
		start, stop = nums[0], nums[1]
	case 3:
		start, stop, step = nums[0], nums[1], nums[2]
	default:
		return jinja.Undefined(), fmt.Errorf("range: expected 1 to 3 arguments, got %d", len(nums))
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range: step must not be zero")
	}
	var items []jinja.Value
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		if len(items) == maxRange {
			return jinja.Undefined(), fmt.Errorf("range: more than %d items", maxRange)
		}
		items = append(items, jinja.NewInt(i))
		if (step > 0 && i > stop-step) || (step < 0 && i < stop-step) {
			break // the next step would overflow or pass stop
		}
	}
	return jinja.NewList(items), nil
}

// splitMarks cuts a rendering at the placeholders mark+index+"X": it returns the texts around
// them (one more than the placeholders) and the message index of each. Text that looks like a
// placeholder but names no message stays template text.
func splitMarks(s, mark string, n int) (tmpl []string, slots []int) {
	var cur strings.Builder
	for {
		k := strings.Index(s, mark)
		if k < 0 {
			cur.WriteString(s)
			break
		}
		cur.WriteString(s[:k])
		rest := s[k+len(mark):]
		d := 0
		for d < len(rest) && d < 6 && rest[d] >= '0' && rest[d] <= '9' {
			d++
		}
		idx, err := strconv.Atoi(rest[:d])
		if d == 0 || err != nil || idx >= n || d >= len(rest) || rest[d] != 'X' {
			cur.WriteString(s[k : k+len(mark)])
			s = rest
			continue
		}
		tmpl = append(tmpl, cur.String())
		cur.Reset()
		slots = append(slots, idx)
		s = rest[d+1:]
	}
	return append(tmpl, cur.String()), slots
}

// variants are what templates commonly do with a message's content, in the order tried.
func variants(c string) []string {
	out := []string{c}
	add := func(v string) {
		for _, o := range out {
			if o == v {
				return
			}
		}
		out = append(out, v)
	}
	add(strings.TrimSpace(c))
	add(strings.TrimLeftFunc(c, unicode.IsSpace))
	add(strings.TrimRightFunc(c, unicode.IsSpace))
	add(strings.TrimLeft(c, "\n"))
	if k := strings.LastIndex(c, "</think>"); k >= 0 {
		after := c[k+len("</think>"):]
		add(after)
		add(strings.TrimSpace(after))
		add(strings.TrimLeft(after, "\n"))
	}
	return out
}

// align returns, for each placeholder, the variant of its message's content with which the
// template segments rebuild real; or the contents unchanged when none does.
func align(real string, tmpl []string, slots []int, msgs []Message, cont bool) []string {
	cands := make([][]string, len(slots))
	for k, i := range slots {
		cands[k] = variants(msgs[i].Content)
	}
	pick := make([]string, len(slots))
	steps := 0
	var try func(k, pos int) bool
	try = func(k, pos int) bool {
		steps++
		if steps > maxAlignSteps || !strings.HasPrefix(real[pos:], tmpl[k]) {
			return false
		}
		pos += len(tmpl[k])
		if k == len(slots) {
			// A continued message ends the prompt where its content ends.
			return pos == len(real) || cont
		}
		for _, v := range cands[k] {
			if strings.HasPrefix(real[pos:], v) {
				pick[k] = v
				if try(k+1, pos+len(v)) {
					return true
				}
			}
		}
		return false
	}
	if try(0, 0) {
		return pick
	}
	for k, i := range slots {
		pick[k] = msgs[i].Content
	}
	return pick
}

// guardName is the namespace through which guardMacros counts macro calls; a template that
// spells it is refused, so it cannot reset the count.
const guardName = "kvlab_macro_depth_7c1e"

// maxMacroDepth is how deeply macro calls may nest.
const maxMacroDepth = 64

// prepare rewrites a template before it is compiled, keeping what jinja2 would render:
//
//   - every macro counts its nesting in the guardName namespace and raises past
//     maxMacroDepth: Go cannot recover from the stack overflow that unbounded recursion causes,
//     yet tool-use templates recurse (over JSON schemas) legitimately;
//   - a "-" that strips whitespace before a tag is dropped where no whitespace precedes the tag
//     (in jinja2 it does nothing there; ardanlabs/jinja v1.8.0 strips the text before the
//     previous tag instead);
//   - "{%+" and "+%}", which ardanlabs/jinja does not parse, become plain tags with the
//     whitespace the "+" keeps written as an expression beside them (before "{%", an empty one
//     after "%}"), which lstrip_blocks and trim_blocks leave alone.
func prepare(src string) (string, error) {
	if strings.Contains(src, guardName) {
		return "", fmt.Errorf("it names %s", guardName)
	}
	const empty = "{{ '' }}"
	var b strings.Builder
	// open writes a tag's opening for the marker left, at a place where dropMinus says no
	// whitespace precedes it.
	open := func(delim, left string, dropMinus bool) {
		switch {
		case left == "-" && !dropMinus:
			b.WriteString(delim + "-")
		default:
			b.WriteString(delim)
		}
	}
	closeTag := func(right string) {
		switch right {
		case "-":
			b.WriteString("-%}")
		case "+":
			b.WriteString("%}" + empty)
		default:
			b.WriteString("%}")
		}
	}
	for pos := 0; ; {
		start := nextTag(src, pos)
		if start < 0 {
			b.WriteString(src[pos:])
			return b.String(), nil
		}
		text := src[pos:start]
		if strings.HasPrefix(src[start:], "{%+") {
			// The spaces lstrip_blocks would remove go out as an expression, which it keeps.
			ws := len(text) - len(strings.TrimRight(text, " \t"))
			b.WriteString(text[:len(text)-ws])
			if ws > 0 {
				b.WriteString("{{ '" + text[len(text)-ws:] + "' }}")
			}
		} else {
			b.WriteString(text)
		}
		dropMinus := start == 0 || !isSpaceByte(src[start-1])
		switch src[start+1] {
		case '#':
			end := strings.Index(src[start+2:], "#}")
			if end < 0 {
				return "", fmt.Errorf("a comment at byte %d is not closed", start)
			}
			pos = start + 2 + end + 2
			b.WriteString(src[start:pos]) // comments never reach the output
			continue
		case '{':
			end, err := quotedEnd(src, start+2, "}}")
			if err != nil {
				return "", err
			}
			body := src[start+2 : end-2]
			left := ""
			if body != "" && (body[0] == '-' || body[0] == '+') {
				left, body = body[:1], body[1:]
			}
			open("{{", left, dropMinus)
			b.WriteString(body + "}}")
			pos = end
			continue
		}
		end, left, right, word, err := blockTag(src, start)
		if err != nil {
			return "", err
		}
		inner := src[start+2+len(left) : end-2-len(right)]
		switch word {
		case "raw":
			// Copy through the end of the raw block as it is.
			k := strings.Index(src[end:], "endraw")
			if k < 0 {
				return "", fmt.Errorf("a raw block at byte %d is not closed", start)
			}
			stop := strings.Index(src[end+k:], "%}")
			if stop < 0 {
				return "", fmt.Errorf("a raw block at byte %d is not closed", start)
			}
			b.WriteString(src[start : end+k+stop+2])
			pos = end + k + stop + 2
			continue
		case "macro":
			open("{%", left, dropMinus)
			b.WriteString(inner + "%}")
			b.WriteString("{% set " + guardName + ".d = " + guardName + ".d + 1 %}{% if " + guardName + ".d > " +
				strconv.Itoa(maxMacroDepth) + " %}{{ raise_exception('macro calls nest more than " +
				strconv.Itoa(maxMacroDepth) + " deep') }}{% endif ")
			closeTag(right)
		case "endmacro":
			open("{%", left, dropMinus)
			b.WriteString(" set " + guardName + ".d = " + guardName + ".d - 1 %}{%" + inner)
			closeTag(right)
		default:
			open("{%", left, dropMinus)
			b.WriteString(inner)
			closeTag(right)
		}
		pos = end
	}
}

// nextTag returns the index of the next "{{", "{%" or "{#" at or after pos, or -1.
func nextTag(src string, pos int) int {
	for {
		k := strings.IndexByte(src[pos:], '{')
		if k < 0 || pos+k+1 >= len(src) {
			return -1
		}
		pos += k
		if c := src[pos+1]; c == '{' || c == '%' || c == '#' {
			return pos
		}
		pos++
	}
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// quotedEnd returns the index just past the first closing delimiter at or after i that is not
// inside a quoted string.
func quotedEnd(src string, i int, delim string) (int, error) {
	start := i
	var quote byte
	for ; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case strings.HasPrefix(src[i:], delim):
			return i + len(delim), nil
		}
	}
	return 0, fmt.Errorf("a tag at byte %d is not closed", start-2)
}

// blockTag reads the tag "{% … %}" at src[start:]: its end, its whitespace-control markers and
// its first word. The end is the first "%}" outside a quoted string.
func blockTag(src string, start int) (end int, left, right, word string, err error) {
	i := start + 2
	if i < len(src) && (src[i] == '-' || src[i] == '+') {
		left = src[i : i+1]
		i++
	}
	if end, err = quotedEnd(src, i, "%}"); err != nil {
		return 0, "", "", "", err
	}
	if p := src[end-3]; end-3 >= i && (p == '-' || p == '+') {
		right = string(p)
	}
	body := strings.TrimLeft(src[i:end-2-len(right)], " \t\r\n")
	w := 0
	for w < len(body) && (body[w] == '_' || body[w] >= 'a' && body[w] <= 'z' || body[w] >= 'A' && body[w] <= 'Z' || body[w] >= '0' && body[w] <= '9') {
		w++
	}
	return end, left, right, body[:w], nil
}
