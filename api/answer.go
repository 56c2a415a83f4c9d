package api

import (
	"encoding/json"
	"errors"
	"fmt"
)

// AnswerName is the name of an answer: the key of its object ({"Agents":[…]}), or the bare
// string ("Ok"). Which answer a request gets when it succeeds is part of the request's kind:
// [Name.Answer].
type AnswerName string

// The answers.
const (
	AnswerOk       AnswerName = "Ok"       // bare
	AnswerTimedOut AnswerName = "TimedOut" // bare
	AnswerError    AnswerName = "Error"    // an [Error]
	AnswerHello    AnswerName = "Hello"    // a [HelloAnswer]
	AnswerAgent    AnswerName = "Agent"    // an [Agent]
	AnswerAgents   AnswerName = "Agents"   // a list of [Agent]
	AnswerScreen   AnswerName = "Screen"   // a [Screen]
	// The answers of the group requests. Their bodies are package worktree's types, which
	// the app, the CLI and the static krad on SSH hosts share: Worktree a worktree.Group,
	// Changes a worktree.Changes, Groups a worktree.List.
	AnswerWorktree AnswerName = "Worktree"
	AnswerChanges  AnswerName = "Changes"
	AnswerGroups   AnswerName = "Groups"
	AnswerRetired  AnswerName = "Retired"  // a worktree.Retired: RetireGroup's answer
	AnswerSynced   AnswerName = "Synced"   // a worktree.Synced: SyncGroup's answer
	AnswerPushed   AnswerName = "Pushed"   // a worktree.Pushed: PushGroup's answer
	AnswerVariants AnswerName = "Variants" // a [Variants]
	AnswerPicked   AnswerName = "Picked"   // a [Picked]
	// AnswerExtension is the answer to ExtensionTool: an [ExtensionAnswer].
	AnswerExtension AnswerName = "Extension"
	// The messages of SubscribeAgents after its first, {"Agents":[…]}.
	AnswerAgentEvent AnswerName = "AgentEvent" // an [AgentEvent]
	AnswerAppEvent   AnswerName = "AppEvent"   // an [AppEvent]
)

// Answer is one answer line: a bare string ("Ok", "TimedOut") when Body is nil, otherwise an
// object with one key, Name, whose value is Body.
type Answer struct {
	Name AnswerName
	Body json.RawMessage
}

// The bare answers.
var (
	OK       = Answer{Name: AnswerOk}
	TimedOut = Answer{Name: AnswerTimedOut}
)

// NewAnswer makes an answer {"name": v}.
func NewAnswer(name AnswerName, v any) (Answer, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Answer{}, fmt.Errorf("encode %s answer: %w", name, err)
	}
	return Answer{Name: name, Body: b}, nil
}

// AnswerTo makes the answer of a request that succeeded: "Ok" for a request whose answer is Ok
// (v must then be nil), otherwise {"answer": v}, the answer named by the request's kind.
func AnswerTo(req Name, v any) (Answer, error) {
	name := req.Answer()
	switch {
	case name == "":
		return Answer{}, fmt.Errorf("%s has no answer yet", req)
	case name == AnswerOk && v == nil:
		return OK, nil
	case name == AnswerOk:
		return Answer{}, fmt.Errorf("%s answers Ok, not a %T", req, v)
	}
	return NewAnswer(name, v)
}

// ErrorAnswer makes the answer {"Error":{"code","message"}}, with "reason" when e has one.
func ErrorAnswer(e *Error) Answer {
	b, _ := json.Marshal(e) // strings: cannot fail
	return Answer{Name: AnswerError, Body: b}
}

// HelloAnswer is the body of the answer to Hello.
type HelloAnswer struct {
	APIVersion int    `json:"api_version"`
	Build      string `json:"build"`
	PID        int    `json:"pid,omitempty"`
}

// MarshalJSON writes the answer in its wire form.
func (a Answer) MarshalJSON() ([]byte, error) {
	if a.Body == nil {
		return json.Marshal(a.Name)
	}
	return encodeTagged(string(a.Name), a.Body)
}

// UnmarshalJSON reads an answer of either form.
func (a *Answer) UnmarshalJSON(b []byte) error {
	name, body, err := decodeTagged(b, "answer")
	if err != nil {
		return err
	}
	*a = Answer{Name: AnswerName(name), Body: body}
	return nil
}

// ErrTimedOut is the "TimedOut" answer as an error: the request's deadline passed in the app.
var ErrTimedOut = errors.New("the app answered TimedOut: the request's deadline passed")

// Err turns an error answer into an error: an *Error for {"Error":…}, ErrTimedOut for "TimedOut",
// and nil for anything else.
func (a Answer) Err() error {
	switch a.Name {
	case AnswerTimedOut:
		if a.Body == nil {
			return ErrTimedOut
		}
	case AnswerError:
		var e Error
		if err := json.Unmarshal(a.Body, &e); err != nil || e.Code == "" {
			return fmt.Errorf("the app answered an error that cannot be read")
		}
		return &e
	}
	return nil
}

// Decode reads the answer's body into v after checking that the answer is called name.
func (a Answer) Decode(name AnswerName, v any) error {
	if err := a.Err(); err != nil {
		return err
	}
	if a.Name != name || a.Body == nil {
		return fmt.Errorf("the app answered %s where %s was expected", a.Name, name)
	}
	if err := json.Unmarshal(a.Body, v); err != nil {
		return fmt.Errorf("read %s answer: %w", name, err)
	}
	return nil
}
