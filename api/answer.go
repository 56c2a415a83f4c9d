package api

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Answer is one answer line: a bare string ("Ok", "TimedOut") when Body is nil, otherwise an
// object with one key, Name, whose value is Body.
type Answer struct {
	Name string
	Body json.RawMessage
}

// The bare answers.
var (
	OK       = Answer{Name: "Ok"}
	TimedOut = Answer{Name: "TimedOut"}
)

// NewAnswer makes an answer {"name": v}.
func NewAnswer(name string, v any) (Answer, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Answer{}, fmt.Errorf("encode %s answer: %w", name, err)
	}
	return Answer{Name: name, Body: b}, nil
}

// ErrorAnswer makes the answer {"Error":{"code","message"}}.
func ErrorAnswer(e *Error) Answer {
	b, _ := json.Marshal(e) // two strings: cannot fail
	return Answer{Name: "Error", Body: b}
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
	return encodeTagged(a.Name, a.Body)
}

// UnmarshalJSON reads an answer of either form.
func (a *Answer) UnmarshalJSON(b []byte) error {
	name, body, err := decodeTagged(b, "answer")
	if err != nil {
		return err
	}
	*a = Answer{Name: name, Body: body}
	return nil
}

// ErrTimedOut is the "TimedOut" answer as an error: the request's deadline passed in the app.
var ErrTimedOut = errors.New("the app answered TimedOut: the request's deadline passed")

// Err turns an error answer into an error: an *Error for {"Error":…}, ErrTimedOut for "TimedOut",
// and nil for anything else.
func (a Answer) Err() error {
	switch a.Name {
	case "TimedOut":
		if a.Body == nil {
			return ErrTimedOut
		}
	case "Error":
		var e Error
		if err := json.Unmarshal(a.Body, &e); err != nil || e.Code == "" {
			return fmt.Errorf("the app answered an error that cannot be read")
		}
		return &e
	}
	return nil
}

// Decode reads the answer's body into v after checking that the answer is called name.
func (a Answer) Decode(name string, v any) error {
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
