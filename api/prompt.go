package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"
)

// CodeBody is the body of Code: open Path (absolute, on the caller's host) in the person's
// editor, at Line when it is set; with Wait, answer once the editor has closed it.
type CodeBody struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
	Wait bool   `json:"wait,omitempty"`
}

// MaxPath is the longest path a Code may name.
const MaxPath = 4096

// AskpassBody is the body of Askpass, which only the Git caller makes: git's prompt (Prompt,
// "Password for 'https://me@host': "), what git asks for (Kind: "password", "username",
// "passphrase" or "" for any other), and the terminal of the Git caller's environment that
// raised it (0: a git the app runs itself). Pending is "" on the first ask; then the id the app
// answered with, to ask again for the same prompt (the long poll).
//
// Key is what proves the terminal: the askpass key the app gave that terminal alone
// ([VarAskpassKey]), or the one it gave the gits of one of its own operations, for terminal 0. A
// prompt whose key is not the one the app gave is refused, and never shown. Program is the
// program that ran the askpass ("git", "ssh"), as the askpass says: declared, not proven.
type AskpassBody struct {
	Prompt   string `json:"prompt"`
	Kind     string `json:"kind,omitempty"`
	Terminal int    `json:"terminal,omitempty"`
	Pending  string `json:"pending,omitempty"`
	Key      string `json:"key,omitempty"`
	Program  string `json:"program,omitempty"`
}

// MaxProgram is the longest name an Askpass's Program may be: a process's name, as Linux keeps
// it, is at most 15 bytes.
const MaxProgram = 32

// MaxPrompt is the longest prompt an Askpass may carry; git's prompts are a line. A longer one is
// refused, never cut, so that the person never answers a prompt they did not see whole.
const MaxPrompt = 1024

// The kinds of an Askpass.
const (
	AskPassword   = "password"
	AskUsername   = "username"
	AskPassphrase = "passphrase"
)

// AnswerAskpass is the answer to Askpass: an [AskpassAnswer].
const AnswerAskpass AnswerName = "Askpass"

// AskpassAnswer is what Askpass answers: Pending, the prompt's id, while the person has not
// answered (ask again with it); or the person's answer in Secret, once, to the caller holding the
// id. Its JSON for logs, like its printed forms, shows no secret: the wire form is made by
// [AskpassAnswer.Wire] and read by [AskpassAnswer.UnmarshalJSON].
type AskpassAnswer struct {
	Pending string `json:"pending,omitempty"`
	Secret  Secret `json:"secret,omitzero"`
}

// Wire is the answer on the wire, the secret revealed: the one place it is.
func (a AskpassAnswer) Wire() (Answer, error) {
	type wire struct {
		Pending string `json:"pending,omitempty"`
		Secret  string `json:"secret,omitempty"`
	}
	return NewAnswer(AnswerAskpass, wire{Pending: a.Pending, Secret: a.Secret.Reveal()})
}

// UnmarshalJSON reads the wire form.
func (a *AskpassAnswer) UnmarshalJSON(b []byte) error {
	var w struct {
		Pending string  `json:"pending"`
		Secret  *string `json:"secret"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return errors.New("the Askpass answer is not an object of pending and secret")
	}
	*a = AskpassAnswer{Pending: w.Pending}
	if w.Secret != nil {
		a.Secret = NewSecret(*w.Secret)
	}
	return nil
}

// Secret is what a person typed at a git prompt. It never prints its value: String, GoString,
// Format, MarshalJSON, MarshalText and LogValue all give [Redacted]. [Secret.Reveal] is the one
// way to the value. The zero Secret is no answer.
type Secret struct {
	value *string
}

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{value: &s} }

// IsZero says whether s holds no answer at all (an empty answer is an answer).
func (s Secret) IsZero() bool { return s.value == nil }

// Reveal returns the value. Call it only to hand the answer to git, or to put it on the wire.
func (s Secret) Reveal() string {
	if s.value == nil {
		return ""
	}
	return *s.value
}

func (s Secret) String() string               { return Redacted }
func (s Secret) GoString() string             { return Redacted }
func (s Secret) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte(Redacted)) }
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(Redacted) }
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }
func (s Secret) LogValue() slog.Value         { return slog.StringValue(Redacted) }
func (s *Secret) UnmarshalJSON(b []byte) error {
	return errors.New("a Secret is read only from an Askpass answer")
}

func validateAskpass(b *AskpassBody) error {
	if len(b.Prompt) > MaxPrompt {
		return fmt.Errorf("prompt is longer than %d bytes: git's prompts are one line", MaxPrompt)
	}
	if !utf8.ValidString(b.Prompt) {
		return errors.New("prompt is not UTF-8")
	}
	switch b.Kind {
	case "", AskPassword, AskUsername, AskPassphrase:
	default:
		return errors.New(`kind must be "password", "username", "passphrase" or left out`)
	}
	if b.Terminal < 0 {
		return errors.New("terminal must be a terminal number, or 0 for a git the app runs")
	}
	if len(b.Pending) > 64 {
		return errors.New("pending is not an id the app gave")
	}
	if b.Key != "" {
		if _, err := ParseToken(b.Key); err != nil {
			return errors.New("key is not an askpass key the app gave: those are 32 lowercase hex digits")
		}
	}
	if !ProgramName(b.Program) {
		return fmt.Errorf("program must be a program's name of at most %d letters, digits and . _ - (or left out)", MaxProgram)
	}
	return nil
}

// ProgramName says whether s may be an Askpass's Program: "", or at most MaxProgram ASCII
// letters, digits, '.', '_' and '-', nothing a screen could take for a control sequence.
func ProgramName(s string) bool {
	if len(s) > MaxProgram {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validateCode(b *CodeBody) error {
	switch {
	case b.Path == "" || len(b.Path) > MaxPath:
		return fmt.Errorf("path must be a file's path of 1 to %d bytes", MaxPath)
	case strings.IndexByte(b.Path, 0) >= 0:
		return errors.New("path holds a NUL byte")
	case !strings.HasPrefix(b.Path, "/"):
		return errors.New("path must be absolute (krad code makes it so)")
	case b.Line != nil && *b.Line < 1:
		return errors.New("line must be 1 or more")
	}
	return nil
}
