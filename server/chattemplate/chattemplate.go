// Package chattemplate turns a conversation into the prompt text a model was trained on. A
// model's own Jinja template (tokenizer.chat_template) is executed (Compile, jinja.go), with
// message contents kept apart from the template's text so that only the template's markers are
// parsed as special tokens. Without a usable template, the built-in formats (Llama 2, ChatML,
// Llama 3, Gemma, recognised from marker strings in the template's text as llama.cpp's
// built-in templates are) render in Go, and a model without any gets a plain transcript.
package chattemplate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// Roles a message may have.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Kind is a chat format.
type Kind string

// Formats Detect recognises.
const (
	Plain  Kind = "plain"
	Llama2 Kind = "llama2"
	ChatML Kind = "chatml"
	Llama3 Kind = "llama3"
	Gemma  Kind = "gemma"
)

// Detect returns the format a Jinja chat template writes, by the markers in its text: Llama 3's
// <|start_header_id|>, ChatML's <|im_start|>, Gemma's <start_of_turn>, Llama 2's [INST]. An
// empty or unrecognised template is Plain.
func Detect(tmpl string) Kind {
	switch {
	case strings.Contains(tmpl, "<|start_header_id|>"):
		return Llama3
	case strings.Contains(tmpl, "<|im_start|>"):
		return ChatML
	case strings.Contains(tmpl, "<start_of_turn>"):
		return Gemma
	case strings.Contains(tmpl, "[INST]"):
		return Llama2
	}
	return Plain
}

// Validate checks a conversation: at least one message, known roles, and a system message
// only first.
func Validate(msgs []Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("chattemplate: the conversation has no messages")
	}
	for i, m := range msgs {
		switch m.Role {
		case RoleUser, RoleAssistant:
		case RoleSystem:
			if i != 0 {
				return fmt.Errorf("chattemplate: message %d: a system message must come first", i)
			}
		default:
			return fmt.Errorf("chattemplate: message %d: unknown role %q (want system, user or assistant)", i, m.Role)
		}
	}
	return nil
}

// Format is a chat format: a built-in Kind or a model's compiled template (*Jinja).
type Format interface {
	// Kind is the built-in format whose markers the format writes (for its stop strings).
	Kind() Kind
	// Name names the format for logs and pages.
	Name() string
	// segments renders a validated conversation.
	segments(msgs []Message) ([]Segment, error)
}

// Kind returns k.
func (k Kind) Kind() Kind { return k }

// Name returns k's name.
func (k Kind) Name() string { return string(k) }

// Render writes msgs in format f, ending with the opening of the assistant's turn (so the model
// writes the reply) unless the last message is the assistant's, which is then continued. It
// writes no BOS: the tokenizer adds it. Special tokens appear as text; RenderSegments tells
// the format's own markers from the messages' text, which must not be parsed as special.
func Render(f Format, msgs []Message) (string, error) {
	segs, err := RenderSegments(f, msgs)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.Text)
	}
	return b.String(), nil
}

// Segment is a piece of a rendered conversation: the format's own text (Template: its markers,
// role names and separators, whose special tokens are parsed) or a message's content (never
// parsed for special tokens, so a message cannot forge a turn).
type Segment struct {
	Text     string
	Template bool
}

// segments collects a rendering, merging neighbours of the same kind.
type segments []Segment

func (s *segments) add(text string, tmpl bool) {
	if text == "" {
		return
	}
	if n := len(*s); n > 0 && (*s)[n-1].Template == tmpl {
		(*s)[n-1].Text += text
		return
	}
	*s = append(*s, Segment{Text: text, Template: tmpl})
}

func (s *segments) tmpl(text string) { s.add(text, true) }
func (s *segments) user(text string) { s.add(text, false) }

// RenderSegments is Render as segments of template text and message content, in order; their
// texts joined are Render's text.
func RenderSegments(f Format, msgs []Message) ([]Segment, error) {
	if err := Validate(msgs); err != nil {
		return nil, err
	}
	return f.segments(msgs)
}

// segments renders the built-in format k.
func (k Kind) segments(msgs []Message) ([]Segment, error) {
	var b segments
	last := msgs[len(msgs)-1]
	cont := last.Role == RoleAssistant
	switch k {
	case ChatML:
		for i, m := range msgs {
			b.tmpl("<|im_start|>" + m.Role + "\n")
			b.user(m.Content)
			if !(cont && i == len(msgs)-1) {
				b.tmpl("<|im_end|>\n")
			}
		}
		if !cont {
			b.tmpl("<|im_start|>assistant\n")
		}
	case Llama3:
		for i, m := range msgs {
			b.tmpl("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n")
			b.user(strings.TrimSpace(m.Content))
			if !(cont && i == len(msgs)-1) {
				b.tmpl("<|eot_id|>")
			}
		}
		if !cont {
			b.tmpl("<|start_header_id|>assistant<|end_header_id|>\n\n")
		}
	case Gemma:
		system := ""
		for i, m := range msgs {
			if m.Role == RoleSystem {
				system = m.Content + "\n\n"
				continue
			}
			role := "user"
			if m.Role == RoleAssistant {
				role = "model"
			}
			b.tmpl("<start_of_turn>" + role + "\n")
			if role == "user" {
				b.user(system)
				system = ""
			}
			b.user(strings.TrimSpace(m.Content))
			if !(cont && i == len(msgs)-1) {
				b.tmpl("<end_of_turn>\n")
			}
		}
		if !cont {
			b.tmpl("<start_of_turn>model\n")
		}
	case Llama2:
		// [INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] assistant </s><s>[INST] user [/INST]
		system, hasSystem := "", false
		first := true
		for i, m := range msgs {
			switch m.Role {
			case RoleSystem:
				system, hasSystem = m.Content, true
			case RoleUser:
				if !first {
					b.tmpl("<s>")
				}
				b.tmpl("[INST] ")
				if hasSystem {
					b.tmpl("<<SYS>>\n")
					b.user(system)
					b.tmpl("\n<</SYS>>\n\n")
				}
				b.user(strings.TrimSpace(m.Content))
				b.tmpl(" [/INST]")
				system, hasSystem, first = "", false, false
			case RoleAssistant:
				b.tmpl(" ")
				b.user(strings.TrimSpace(m.Content))
				if !(cont && i == len(msgs)-1) {
					b.tmpl(" </s>")
				}
				first = false
			}
		}
	default:
		renderPlain(&b, msgs, cont)
	}
	return b, nil
}

// renderPlain writes the fallback for models without a chat template, often base models: the
// conversation is one continuing text. The first user message (after an optional system
// message) is the prompt as it is, so a base model continues it; each reply follows the text
// before it (after a space when it starts with a word and the text before ends without one),
// and each later user message starts a new line. A conversation therefore starts with its
// earlier turns' text, so the next turn reuses their cached tokens.
func renderPlain(b *segments, msgs []Message, _ bool) {
	body := msgs
	if body[0].Role == RoleSystem {
		b.user(body[0].Content)
		body = body[1:]
		if len(body) > 0 {
			b.tmpl("\n\n")
		}
	}
	prev := ""
	for i, m := range body {
		switch {
		case m.Role == RoleUser && i > 0:
			b.tmpl("\n")
		case m.Role == RoleAssistant && i > 0 && startsWithWord(m.Content) && !endsWithSpace(prev):
			b.tmpl(" ")
		}
		b.user(m.Content)
		prev = m.Content
	}
}

// startsWithWord reports that s starts with a letter or digit.
func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

func endsWithSpace(s string) bool { return s != "" && strings.TrimRight(s[len(s)-1:], " \t\n") == "" }

// Stops are the strings that end the assistant's turn in format f when the tokenizer does not
// already mark them as end-of-generation tokens.
func Stops(f Format) []string {
	switch f.Kind() {
	case ChatML:
		return []string{"<|im_end|>", "<|im_start|>"}
	case Llama3:
		return []string{"<|eot_id|>", "<|start_header_id|>"}
	case Gemma:
		return []string{"<end_of_turn>", "<start_of_turn>"}
	case Llama2:
		return []string{"</s>", "[INST]"}
	}
	// The plain format is one continuing text, with no turn markers to stop at.
	return nil
}
