package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// FuzzDecodeEnvelope: whatever the line, decoding never panics; every failure is an *Error with
// code bad_request and never repeats the token; and a line that decodes re-encodes to an envelope
// that decodes to the same caller.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"api_version":1,"token":"6f1c0d9e2b7a4c58e3f09a1d7b6c2e40","from":"Client","request":"Hello"}`,
		`{"api_version":1,"token":"x","from":{"Terminal":{"environment":"main","terminal":4}},"request":{"Wait":{"target":4,"timeout_secs":600}}}`,
		`{"from":{"Lead":{"environment":"b-1.x","terminal":2}},"request":{"Send":{"target":3,"text":"hi","enter":false}}}`,
		`{"from":{"Git":"main"},"request":{"Askpass":{"prompt":"Password"}}}`,
		`{"from":{"Git":"main"},"request":{"Askpass":{"prompt":"Password for 'x': \u001b[2J","kind":"password","terminal":3,"pending":"ab"}}}`,
		`{"from":{"Terminal":{"environment":"main","terminal":1}},"request":{"Code":{"path":"/src/a.go","line":4,"wait":true}}}`,
		`{"from":{"Terminal":{"environment":"main","terminal":1}},"request":{"Code":{"path":"a.go","line":0}}}`,
		`{"api_version":2,"from":"Client","request":{"Spawn":{"title":"t","command":["a","b"]}}}`,
		`{"from":{"Terminal":{"environment":"build","terminal":1}},"request":{"ExtensionTool":{"extension":"tracker","tool":"create_issue","arguments":{"title":"x"}}}}`,
		`{"from":{"Terminal":{"environment":"main","terminal":1}},"request":{"ExtensionTool":{"extension":"t","arguments":[1]}}}`,
		`{"from":{"Terminal":{"environment":"main","terminal":1}},"request":{"SyncGroup":{"group":"g","how":"rebase"}}}`,
		`{"from":{"Terminal":{"environment":"main","terminal":1}},"request":{"PushGroup":{"group":"g","pr":true,"title":"t","draft":true,"remote":"up"}}}`,
		`{"from":{"Terminal":{"environment":"main","terminal":1}},"request":{"Report":{"state":"failed","lifecycle":true,"setup":"failed","exit_code":3}}}`,
		`{"from":{"Terminal":{"environment":"build","terminal":1}},"request":{"MCP":{"home":"/home/u","in":"eyJqc29ucnBjIjoiMi4wIn0K"}}}`,
		`{"from":{"Terminal":{"environment":"build","terminal":1}},"request":{"MCP":{"open":"0123456789abcdef0123456789abcdef","home":"/home/u"}}}`,
		`{"from":{"Terminal":{"environment":"build","terminal":1}},"request":{"MCP":{"session":"0123456789abcdef0123456789abcdef","in":"e30K","in_at":7,"got":12,"end":true}}}`,
		`{"from":{"Terminal":{"environment":"build","terminal":1}},"request":{"MCP":{"session":"x","in_at":-1,"in":"!!"}}}`,
		`[]`, `null`, `{"from":"Client","request":{"a":1,"b":2}}`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		env, err := DecodeEnvelope(line)
		if err != nil {
			assertBadRequest(t, err)
			return
		}
		req, err := env.Request.Decode()
		if err != nil {
			assertBadRequest(t, err)
			return
		}
		_ = req.Deadline()
		out, err := json.Marshal(Envelope{APIVersion: env.APIVersion, Token: env.Token, From: env.From, Request: req})
		if err != nil {
			if env.APIVersion == 0 {
				return // version 0 is re-encoded as 1; nothing to compare
			}
			t.Fatalf("a decoded envelope does not encode: %v", err)
		}
		again, err := DecodeEnvelope(out)
		if err != nil {
			t.Fatalf("re-encoded envelope %s does not decode: %v", out, err)
		}
		if again.From != env.From || again.Request.Name != env.Request.Name {
			t.Fatalf("round trip changed the envelope: %+v then %+v", env, again)
		}
	})
}

func assertBadRequest(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeBadRequest {
		t.Fatalf("got %T %v, want an *Error with code bad_request", err, err)
	}
	if len(e.Message) == 0 {
		t.Fatal("an error without a message")
	}
}

// FuzzReadLine: whatever the bytes and the limit, ReadLine never panics, never returns more than
// the limit, returns a line with no newline in it, and fails only with bad_request.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("abc\n"), uint16(3), uint8(16))
	f.Add([]byte("abcd\n"), uint16(3), uint8(1))
	f.Add([]byte(""), uint16(0), uint8(0))
	f.Add(bytes.Repeat([]byte("x"), 300), uint16(100), uint8(7))
	f.Fuzz(func(t *testing.T, in []byte, max uint16, bufSize uint8) {
		r := bufio.NewReaderSize(bytes.NewReader(in), int(bufSize)+16)
		line, err := ReadLine(r, int(max))
		if err != nil {
			assertBadRequest(t, err)
			return
		}
		if len(line) > int(max) {
			t.Fatalf("got %d bytes with a limit of %d", len(line), max)
		}
		if bytes.IndexByte(line, '\n') >= 0 {
			t.Fatal("the line contains a newline")
		}
		if !bytes.HasPrefix(in, append(line, '\n')) {
			t.Fatal("the line is not the input's first line")
		}
	})
}

// FuzzAskpassAnswer: whatever the app's answer body, reading it never panics, and what it read
// prints no secret.
func FuzzAskpassAnswer(f *testing.F) {
	for _, s := range []string{`{"pending":"ab"}`, `{"secret":"pw"}`, `{"secret":null}`, `[]`, `{"secret":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var a AskpassAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			return
		}
		out, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if s := a.Secret.Reveal(); len(s) > 2 && bytes.Contains(out, []byte(s)) && s != Redacted && !strings.Contains(Redacted, s) && !strings.Contains(a.Pending, s) && !strings.Contains(`"pending":"secret":`, s) {
			t.Fatalf("the answer's JSON for logs %s holds its secret", out)
		}
		if fmt.Sprint(a.Secret) != Redacted {
			t.Fatalf("the secret prints %s", a.Secret)
		}
	})
}
