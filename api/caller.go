package api

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// CallerKind says who is calling, as the envelope's "from" names it.
type CallerKind int

// The callers of the spec.
const (
	// CallerClient is a program outside the app's terminals: "Client".
	CallerClient CallerKind = iota + 1
	// CallerTerminal is a terminal or chat of an environment: {"Terminal":{"environment":E,"terminal":N}}.
	CallerTerminal
	// CallerLead is a lead calling with the lead token: {"Lead":{"environment":E,"terminal":N}}.
	CallerLead
	// CallerGit is the app's own git credential prompt: {"Git":"main"}.
	CallerGit
)

func (k CallerKind) String() string {
	switch k {
	case CallerClient:
		return "Client"
	case CallerTerminal:
		return "Terminal"
	case CallerLead:
		return "Lead"
	case CallerGit:
		return "Git"
	}
	return "CallerKind(" + strconv.Itoa(int(k)) + ")"
}

// TerminalID names terminal N of environment E; it prints as "E:N".
type TerminalID struct {
	Environment string `json:"environment"`
	Terminal    int    `json:"terminal"`
}

func (id TerminalID) String() string { return id.Environment + ":" + strconv.Itoa(id.Terminal) }

// ParseTerminalID reads "E:N", the form of KRAD_ADE_TERMINAL.
func ParseTerminalID(s string) (TerminalID, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return TerminalID{}, fmt.Errorf("a terminal is environment:number, like main:4")
	}
	n, err := strconv.Atoi(s[i+1:])
	id := TerminalID{Environment: s[:i], Terminal: n}
	if err != nil {
		return TerminalID{}, fmt.Errorf("a terminal is environment:number, like main:4: the number is not a whole number")
	}
	if err := id.validate(); err != nil {
		return TerminalID{}, err
	}
	return id, nil
}

func (id TerminalID) validate() error {
	if err := ValidEnvironment(id.Environment); err != nil {
		return err
	}
	if id.Terminal < 1 {
		return fmt.Errorf("terminal numbers start at 1")
	}
	return nil
}

// MaxEnvironmentName is the longest environment name.
const MaxEnvironmentName = 64

// ValidEnvironment checks an environment name: 1 to 64 of A-Z a-z 0-9 _ -, not starting with a
// dash. The same names are tmux session names (where '.' and ':' would be changed) and folder
// names on hosts.
func ValidEnvironment(name string) error {
	if name == "" || len(name) > MaxEnvironmentName {
		return fmt.Errorf("an environment name has 1 to %d characters", MaxEnvironmentName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' ||
			(i > 0 && c == '-')
		if !ok {
			return fmt.Errorf("an environment name is made of letters, digits, '_' and '-', and starts with a letter, digit or '_'")
		}
	}
	return nil
}

// Caller is the envelope's "from". Terminal is set for Terminal and Lead callers, Environment for
// the Git caller.
type Caller struct {
	Kind        CallerKind
	Terminal    TerminalID
	Environment string
}

// FromClient is the caller of programs outside the app.
var FromClient = Caller{Kind: CallerClient}

// FromTerminal is the caller of terminal id.
func FromTerminal(id TerminalID) Caller { return Caller{Kind: CallerTerminal, Terminal: id} }

func (c Caller) String() string {
	switch c.Kind {
	case CallerClient:
		return "Client"
	case CallerTerminal:
		return "Terminal " + c.Terminal.String()
	case CallerLead:
		return "Lead " + c.Terminal.String()
	case CallerGit:
		return "Git " + c.Environment
	}
	return c.Kind.String()
}

// MarshalJSON writes the caller in the envelope's form.
func (c Caller) MarshalJSON() ([]byte, error) {
	switch c.Kind {
	case CallerClient:
		return encodeTagged("Client", nil)
	case CallerTerminal, CallerLead:
		return encodeTagged(c.Kind.String(), c.Terminal)
	case CallerGit:
		return encodeTagged("Git", c.Environment)
	}
	return nil, fmt.Errorf("caller of unknown kind %d", int(c.Kind))
}

// UnmarshalJSON reads a caller; every failure is an *Error with code bad_request.
func (c *Caller) UnmarshalJSON(b []byte) error {
	name, body, err := decodeTagged(b, "from")
	if err != nil {
		return err
	}
	switch name {
	case "Client":
		if body != nil {
			return Errorf(CodeBadRequest, `from "Client" is a bare string`)
		}
		*c = FromClient
		return nil
	case "Terminal", "Lead":
		var id TerminalID
		if body == nil || decodeStrict(body, &id) != nil {
			return Errorf(CodeBadRequest, `from %q must be {"environment":E,"terminal":N}`, name)
		}
		if err := id.validate(); err != nil {
			return Errorf(CodeBadRequest, "from %s: %v", name, err)
		}
		kind := CallerTerminal
		if name == "Lead" {
			kind = CallerLead
		}
		*c = Caller{Kind: kind, Terminal: id}
		return nil
	case "Git":
		var env string
		if body == nil || json.Unmarshal(body, &env) != nil {
			return Errorf(CodeBadRequest, `from "Git" names an environment: {"Git":"main"}`)
		}
		if err := ValidEnvironment(env); err != nil {
			return Errorf(CodeBadRequest, "from Git: %v", err)
		}
		*c = Caller{Kind: CallerGit, Environment: env}
		return nil
	}
	return Errorf(CodeBadRequest, "from names an unknown caller; callers are Client, Terminal, Lead and Git")
}
