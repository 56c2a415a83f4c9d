package api

import (
	"bytes"
	"encoding/json"
)

// Version is the API version this code speaks and serves.
const Version = 1

// Envelope is a request line as a client writes it.
type Envelope struct {
	APIVersion int
	Token      Token
	From       Caller
	Request    Request
}

// MarshalJSON writes the envelope for the wire. It is the one place a token is revealed into JSON.
func (e Envelope) MarshalJSON() ([]byte, error) {
	v := e.APIVersion
	if v == 0 {
		v = Version
	}
	return json.Marshal(struct {
		APIVersion int     `json:"api_version"`
		Token      string  `json:"token"`
		From       Caller  `json:"from"`
		Request    Request `json:"request"`
	}{v, e.Token.Reveal(), e.From, e.Request})
}

// Received is an envelope as the bus reads it, before the token and the version are checked:
// the request is still raw, so that a request of another version is refused for its version
// rather than for its shape.
type Received struct {
	APIVersion int
	Token      Token
	From       Caller
	Request    RawRequest
}

// DecodeEnvelope reads one request line: a JSON object with "api_version" (a whole number; 1 when
// missing), "token" (a string), "from" (a caller) and "request" (a string or a one-key object).
// Keys are matched exactly and other keys are ignored. Every failure is an *Error with code
// bad_request.
func DecodeEnvelope(line []byte) (Received, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Received{}, Errorf(CodeBadRequest, "the request line must be a JSON object (an envelope)")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return Received{}, Errorf(CodeBadRequest, "the request line is not valid JSON")
	}
	r := Received{APIVersion: Version}
	if raw, ok := fields["api_version"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &r.APIVersion); err != nil {
			return Received{}, Errorf(CodeBadRequest, "api_version must be a whole number, like 1")
		}
	}
	if raw, ok := fields["token"]; ok && !isNull(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Received{}, Errorf(CodeBadRequest, "token must be a string")
		}
		r.Token = tokenOf(s)
	}
	raw, ok := fields["from"]
	if !ok || isNull(raw) {
		return Received{}, Errorf(CodeBadRequest, `from is missing: say who is calling, like "Client"`)
	}
	if err := json.Unmarshal(raw, &r.From); err != nil {
		return Received{}, asBadRequest(err, "from")
	}
	raw, ok = fields["request"]
	if !ok || isNull(raw) {
		return Received{}, Errorf(CodeBadRequest, `request is missing, like "Hello"`)
	}
	if err := json.Unmarshal(raw, &r.Request); err != nil {
		return Received{}, asBadRequest(err, "request")
	}
	return r, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// asBadRequest keeps an *Error as it is and turns anything else into a bad_request about what.
func asBadRequest(err error, what string) error {
	if e, ok := err.(*Error); ok {
		return e
	}
	return Errorf(CodeBadRequest, "%s is not valid", what)
}
