package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

const secret = "6f1c0d9e2b7a4c58e3f09a1d7b6c2e40"

func TestTokenNeverPrints(t *testing.T) {
	tok, err := ParseToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	holder := struct {
		Name  string
		Token Token
		Ptr   *Token
	}{"bus", tok, &tok}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		outs = append(outs, fmt.Sprintf(verb, tok), fmt.Sprintf(verb, holder), fmt.Sprintf(verb, &tok))
	}
	outs = append(outs, fmt.Sprint(tok), fmt.Sprintln(holder), tok.String(), tok.GoString())
	js, _ := json.Marshal(holder)
	outs = append(outs, string(js))
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "token", tok, "holder", holder)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "token", tok, "holder", holder, "ptr", &tok)
	outs = append(outs, buf.String())
	if err := tok.validateNothing(); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("ParseToken's error %v contains the token", err)
	}
	for _, out := range outs {
		if strings.Contains(out, secret) || strings.Contains(out, "6f1c") {
			t.Errorf("the token leaked: %q", out)
		}
		if !strings.Contains(out, Redacted) {
			t.Errorf("%q does not say %s", out, Redacted)
		}
	}
	if tok.Reveal() != secret {
		t.Errorf("Reveal() = %q, want the token", tok.Reveal())
	}
}

// validateNothing exists so the test above can show that errors about tokens carry no value.
func (t Token) validateNothing() error {
	_, err := ParseToken(t.value + "!")
	return err
}

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseToken(tok.Reveal()); err != nil {
			t.Fatalf("NewToken made a malformed token: %v", err)
		}
		if seen[tok.Reveal()] {
			t.Fatal("NewToken repeated itself")
		}
		seen[tok.Reveal()] = true
	}
}

func TestTokenEqual(t *testing.T) {
	a, _ := ParseToken(secret)
	b, _ := ParseToken(secret)
	c, _ := ParseToken(strings.Repeat("0", 32))
	tests := []struct {
		x, y Token
		want bool
	}{
		{a, b, true}, {a, c, false}, {a, Token{}, false}, {Token{}, Token{}, false}, {a, tokenOf(secret[:31]), false},
	}
	for i, tt := range tests {
		if got := tt.x.Equal(tt.y); got != tt.want {
			t.Errorf("case %d: got %v, want %v", i, got, tt.want)
		}
	}
}

func TestParseToken(t *testing.T) {
	for _, s := range []string{"", secret[:31], secret + "0", strings.ToUpper(secret), "g" + secret[1:], " " + secret[1:]} {
		if _, err := ParseToken(s); !errors.Is(err, ErrMalformedToken) {
			t.Errorf("ParseToken(%q) = %v, want ErrMalformedToken", s, err)
		}
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	tok, _ := ParseToken(secret)
	two := uint32(600)
	tests := []struct {
		env  Envelope
		wire string
	}{
		{Envelope{Token: tok, From: FromClient, Request: NewRequest(Hello, nil)},
			`{"api_version":1,"token":"` + secret + `","from":"Client","request":"Hello"}`},
		{Envelope{Token: tok, From: FromTerminal(TerminalID{"main", 4}), Request: NewRequest(Wait, &WaitBody{Target: 4, TimeoutSecs: &two})},
			`{"api_version":1,"token":"` + secret + `","from":{"Terminal":{"environment":"main","terminal":4}},"request":{"Wait":{"target":4,"timeout_secs":600}}}`},
		{Envelope{Token: tok, From: Caller{Kind: CallerGit, Environment: "main"}, Request: NewRequest(List, nil)},
			`{"api_version":1,"token":"` + secret + `","from":{"Git":"main"},"request":"List"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.env)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.wire {
			t.Errorf("got %s, want %s", b, tt.wire)
		}
		got, err := DecodeEnvelope(b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		req, err := got.Request.Decode()
		if err != nil {
			t.Fatalf("decode request of %s: %v", b, err)
		}
		if got.From != tt.env.From || !got.Token.Equal(tok) || got.APIVersion != 1 || req.Name != tt.env.Request.Name {
			t.Errorf("round trip of %s: got %+v %+v", b, got, req)
		}
	}
}

func TestDecodeEnvelopeErrors(t *testing.T) {
	for _, line := range []string{
		``, `null`, `[]`, `"x"`, `{`, `{}`, `{"from":"Client"}`, `{"request":"Hello"}`,
		`{"from":"Client","request":"Hello","api_version":1.5}`,
		`{"from":"Client","request":"Hello","api_version":"1"}`,
		`{"from":"Client","request":"Hello","token":["a"]}`,
		`{"from":"client","request":"Hello"}`,
		`{"from":{"Terminal":{"environment":"","terminal":1}},"request":"Hello"}`,
		`{"from":{"Terminal":{"environment":"main","terminal":0}},"request":"Hello"}`,
		`{"from":{"Terminal":{"environment":"a b","terminal":1}},"request":"Hello"}`,
		`{"from":{"Terminal":{"environment":"main","terminal":1},"Lead":{}},"request":"Hello"}`,
		`{"from":{"Terminal":{"environment":"main","terminal":1,"x":1}},"request":"Hello"}`,
		`{"from":"Client","request":{}}`,
		`{"from":"Client","request":[]}`,
		`{"from":"Client","request":{"a":1,"b":2}}`,
	} {
		_, err := DecodeEnvelope([]byte(line))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest {
			t.Errorf("DecodeEnvelope(%s) = %v, want bad_request", line, err)
		}
	}
}

func TestDeadlines(t *testing.T) {
	secs := func(n uint32) *uint32 { return &n }
	tests := []struct {
		req  Request
		want time.Duration
	}{
		{NewRequest(Hello, nil), 10 * time.Second},
		{NewRequest(List, nil), 10 * time.Second},
		{NewRequest(Read, &ReadBody{Target: 1}), 10 * time.Second},
		{NewRequest(Send, &SendBody{Target: 1}), 10 * time.Second},
		{NewRequest(Check, &CheckBody{Target: 1}), 10 * time.Second},
		{NewRequest(Check, &CheckBody{Target: 1, WaitSecs: secs(5)}), 6 * time.Second},
		{NewRequest(Check, &CheckBody{Target: 1, WaitSecs: secs(7200)}), 30*time.Minute + time.Second},
		{NewRequest(Wait, &WaitBody{Target: 1, TimeoutSecs: secs(600)}), 10*time.Minute + time.Second},
		{NewRequest(Wait, &WaitBody{Target: 1, TimeoutSecs: secs(1 << 31)}), 30*time.Minute + time.Second},
		{NewRequest(Wait, &WaitBody{Target: 1}), 30*time.Minute + time.Second},
		{NewRequest(CreateWorktree, nil), time.Minute},
		{NewRequest(Changes, nil), time.Minute},
		{NewRequest(Close, nil), time.Minute},
		{NewRequest(PickVariant, nil), time.Minute},
		{NewRequest(Spawn, nil), time.Minute},
		{NewRequest(RunVariants, nil), time.Minute},
		{NewRequest(Code, nil), 2 * time.Minute},
		{NewRequest(ExtensionTool, nil), 2 * time.Minute},
		{NewRequest(SubscribeAgents, nil), 0},
	}
	for _, tt := range tests {
		if got := tt.req.Deadline(); got != tt.want {
			t.Errorf("%s %+v: deadline %v, want %v", tt.req.Name, tt.req.Body, got, tt.want)
		}
	}
}

func TestTarget(t *testing.T) {
	tests := []struct {
		req    Request
		want   Target
		wantOK bool
	}{
		{NewRequest(Check, &CheckBody{Target: 2}), 2, true},
		{NewRequest(Wait, &WaitBody{Target: 3}), 3, true},
		{NewRequest(Read, &ReadBody{Target: 4}), 4, true},
		{NewRequest(Send, &SendBody{Target: 5}), 5, true},
		{NewRequest(Close, &CloseBody{Target: 6}), 6, true},
		{NewRequest(Spawn, &SpawnBody{Title: "w"}), 0, false},
		{NewRequest(Report, &ReportBody{State: StateIdle}), 0, false},
		{NewRequest(List, nil), 0, false},
	}
	for _, tt := range tests {
		if got, ok := tt.req.Target(); got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: got target %d, %v; want %d, %v", tt.req.Name, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestReadLine(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
		code ErrorCode
	}{
		{"abc\n", 3, "abc", ""},
		{"abcd\n", 3, "", CodeBadRequest},
		{"abcd", 3, "", CodeBadRequest},
		{"abc", 3, "", CodeBadRequest}, // no newline
		{"", 3, "", CodeBadRequest},
		{"\n", 3, "", ""},
		{"a\nb\n", 3, "a", ""},
		{strings.Repeat("x", 10000) + "\n", 10000, strings.Repeat("x", 10000), ""},
		{strings.Repeat("x", 10001) + "\n", 10000, "", CodeBadRequest},
	}
	for _, tt := range tests {
		got, err := ReadLine(bufio.NewReaderSize(strings.NewReader(tt.in), 16), tt.max)
		var e *Error
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("ReadLine(%.20q) = %v", tt.in, err)
		case tt.code != "" && (!errors.As(err, &e) || e.Code != tt.code):
			t.Errorf("ReadLine(%.20q) = %v, want %s", tt.in, err, tt.code)
		case string(got) != tt.want:
			t.Errorf("ReadLine(%.20q) = %.20q, want %.20q", tt.in, got, tt.want)
		}
	}
}

func TestAnswerErr(t *testing.T) {
	var a Answer
	_ = json.Unmarshal([]byte(`{"Error":{"code":"not_found","message":"no terminal 4"}}`), &a)
	var e *Error
	if err := a.Err(); !errors.As(err, &e) || e.Code != CodeNotFound || e.Message != "no terminal 4" {
		t.Errorf("got %v", err)
	}
	_ = json.Unmarshal([]byte(`{"Error":{"code":"not_found","message":"gone","reason":"no_terminal"}}`), &a)
	if err := a.Err(); !errors.As(err, &e) || e.Code != CodeNotFound || e.Reason != ReasonNoTerminal {
		t.Errorf("got %v with reason %q, want not_found with reason no_terminal", err, e.Reason)
	}
	_ = json.Unmarshal([]byte(`"TimedOut"`), &a)
	if err := a.Err(); !errors.Is(err, ErrTimedOut) {
		t.Errorf("got %v, want ErrTimedOut", err)
	}
	_ = json.Unmarshal([]byte(`"Ok"`), &a)
	if err := a.Err(); err != nil {
		t.Errorf("Ok is not an error, got %v", err)
	}
}

func TestCheckEndpoint(t *testing.T) {
	for ep, ok := range map[string]bool{
		"127.0.0.1:52144": true, "127.1.2.3:1": true, "[::1]:52144": true,
		"10.0.0.1:52144": false, "0.0.0.0:1": false, "localhost:1": false, "127.0.0.1": false,
		"127.0.0.1:0": false, "": false, "example.com:22": false,
	} {
		if err := CheckEndpoint(ep); (err == nil) != ok {
			t.Errorf("CheckEndpoint(%q) = %v, want ok=%v", ep, err, ok)
		}
	}
}

// TestAnswerTooLong: an answer line over MaxAnswerLine is ErrAnswerTooLong, for Call and for
// Subscribe, and a line that is merely broken is not.
func TestAnswerTooLong(t *testing.T) {
	long := `{"Agents":[{"title":"` + strings.Repeat("x", MaxAnswerLine) + `"}]}` + "\n"
	if _, err := readAnswer(bufio.NewReader(strings.NewReader(long))); !errors.Is(err, ErrAnswerTooLong) {
		t.Errorf("an answer of %d bytes: %v, want ErrAnswerTooLong", len(long), err)
	}
	if _, err := readAnswer(bufio.NewReader(strings.NewReader(`{"Agents":[]}`))); err == nil || errors.Is(err, ErrAnswerTooLong) {
		t.Errorf("an answer without its newline: %v, want an error other than ErrAnswerTooLong", err)
	}
	if !strings.Contains(ErrAnswerTooLong.Error(), "32 MiB") {
		t.Errorf("ErrAnswerTooLong says %q, not the limit", ErrAnswerTooLong)
	}
}

// A NUL byte cannot be typed into a terminal nor be part of a program's argument: tmux refuses
// the whole command, and the app would answer internal after part of the work. The bus refuses
// it first, with bad_request, in every field that reaches a terminal or a command line.
func TestNULRefused(t *testing.T) {
	for _, tt := range []struct{ name, body, field string }{
		{"Send", `{"target":2,"text":"a\u0000b"}`, "text"},
		{"Spawn", `{"title":"w","prompt":"a\u0000b"}`, "prompt"},
		{"Spawn", `{"title":"w","command":["sh","-c","echo a\u0000b"]}`, "command[2]"},
		{"Spawn", `{"title":"w","agent":"cla\u0000ude"}`, "agent"},
		{"Spawn", `{"title":"w\u0000"}`, "title"},
	} {
		_, err := RawRequest{Name: tt.name, Body: json.RawMessage(tt.body)}.Decode()
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest || !strings.Contains(e.Message, tt.field) {
			t.Errorf("%s %s: got %v, want bad_request naming %s", tt.name, tt.body, err, tt.field)
		}
	}
	for _, tt := range []struct{ name, body string }{
		{"Send", `{"target":2,"text":"a\u0001b\n"}`},
		{"Spawn", `{"title":"w","prompt":"line\nline","command":["sh","-c","echo $x"],"agent":"claude"}`},
	} {
		if _, err := (RawRequest{Name: tt.name, Body: json.RawMessage(tt.body)}).Decode(); err != nil {
			t.Errorf("%s %s: %v, want it accepted", tt.name, tt.body, err)
		}
	}
}

// TestExtensionToolBody: what ExtensionTool accepts, and what it refuses with bad_request.
func TestExtensionToolBody(t *testing.T) {
	for _, tt := range []struct {
		body, want string // want: "" accepted, else part of the message
	}{
		{`{"extension":"tracker"}`, ""},
		{`{"extension":"tracker","tool":"greet (structured)","arguments":{"name":"Bo"}}`, ""},
		{`{"extension":"tracker","tool":"t","arguments":  {}}`, ""},
		{`{}`, ""},
		{`{"extension":"","tool":"x"}`, "extension must be 1 to 40"},
		{`{"extension":"Tracker"}`, "extension must be 1 to 40"},
		{`{"extension":"t","arguments":{}}`, "arguments need a tool"},
		{`{"extension":"t","tool":"a\u001bb"}`, "no control characters"},
		{`{"extension":"t","tool":"` + strings.Repeat("x", MaxToolName+1) + `"}`, "at most 128 bytes"},
		{`{"extension":"t","tool":"x","arguments":[1]}`, "arguments must be a JSON object"},
		{`{"extension":"t","tool":"x","arguments":"{}"}`, "arguments must be a JSON object"},
		{`{"extension":"t","env":"main"}`, "unknown field"},
	} {
		checkBody(t, ExtensionTool, tt.body, tt.want)
	}
	if d := NewRequest(ExtensionTool, &ExtensionToolBody{Extension: "t"}).Deadline(); d != 2*time.Minute {
		t.Errorf("ExtensionTool's deadline is %s, want the spec's 2 minutes", d)
	}
}

// TestMCPBody: what an MCP request may carry; the open id and HOME only where a session opens.
func TestMCPBody(t *testing.T) {
	const id = `0123456789abcdef0123456789abcdef`
	for _, tt := range []struct {
		body, want string // want: "" accepted, else part of the message
	}{
		{`{}`, ""},
		{`{"open":"` + id + `","home":"/home/u","in":"e30K"}`, ""},
		{`{"session":"` + id + `","in":"e30K","in_at":3,"got":9,"end":true}`, ""},
		{`{"session":"` + id + `","open":"` + id + `"}`, "open goes with the requests that open a session"},
		{`{"open":"0123"}`, "open is an id krad picks"},
		{`{"open":"0123456789ABCDEF0123456789ABCDEF"}`, "open is an id krad picks"},
		{`{"session":"` + id + `","home":"/h"}`, "home goes with"},
		{`{"session":"x"}`, "session is not an id"},
		{`{"in_at":4}`, "starts at byte 0"},
	} {
		checkBody(t, MCP, tt.body, tt.want)
	}
}

// checkBody decodes body as a request of name: accepted where want is "", else bad_request with
// want in its message.
func checkBody(t *testing.T, name Name, body, want string) {
	t.Helper()
	_, err := RawRequest{Name: string(name), Body: json.RawMessage(body)}.Decode()
	if want == "" {
		if err != nil {
			t.Errorf("%s: %v, want it accepted", body, err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeBadRequest || !strings.Contains(e.Message, want) {
		t.Errorf("%s: %v, want bad_request with %q", body, err, want)
	}
}

// TestErrorReasonOnTheWire: an error's reason is krad's optional addition to the spec's Error
// object: {"code","message"} as before when it has none, "reason" after them when it has one.
func TestErrorReasonOnTheWire(t *testing.T) {
	for _, tt := range []struct {
		e    *Error
		want string
	}{
		{Errorf(CodeConflict, "busy"), `{"Error":{"code":"conflict","message":"busy"}}`},
		{NoTerminal("main", 9), `{"Error":{"code":"not_found","message":"no terminal main:9: see krad list","reason":"no_terminal"}}`},
		{NotServed("Changes", ""), `{"Error":{"code":"unavailable","message":"this build of krad-ade does not serve Changes yet","reason":"not_served"}}`},
		{Dropped("why"), `{"Error":{"code":"unavailable","message":"the bus dropped this connection before it read its line: why","reason":"dropped"}}`},
	} {
		got, err := json.Marshal(ErrorAnswer(tt.e))
		if err != nil || string(got) != tt.want {
			t.Errorf("ErrorAnswer(%v) = %s, %v; want %s", tt.e, got, err, tt.want)
		}
	}
	// The reason tells them apart, whatever their words.
	if !IsNotServed(Errorf(CodeUnavailable, "later").WithReason(ReasonNotServed)) || IsNotServed(Errorf(CodeUnavailable, "this build of krad-ade does not serve x yet")) {
		t.Error("IsNotServed reads the message, not the reason")
	}
	if !IsDropped(Errorf(CodeUnavailable, "flood").WithReason(ReasonDropped)) || IsDropped(Errorf(CodeUnavailable, "the bus dropped this connection before it read its line: x")) {
		t.Error("IsDropped reads the message, not the reason")
	}
}

// TestReportStates: a Report carries one of the five states an agent may say of itself, written
// exactly; the app's own states (starting, closed, unreachable) and anything else are refused
// with bad_request.
func TestReportStates(t *testing.T) {
	for _, state := range []string{"working", "idle", "needs_input", "done", "failed"} {
		r, err := RawRequest{Name: "Report", Body: json.RawMessage(`{"state":"` + state + `"}`)}.Decode()
		if err != nil {
			t.Errorf("Report %s: %v, want it accepted", state, err)
			continue
		}
		if got := r.Body.(*ReportBody).State; got != State(state) {
			t.Errorf("Report %s decoded as %q", state, got)
		}
	}
	for _, body := range []string{
		`{"state":"starting"}`, `{"state":"closed"}`, `{"state":"unreachable"}`,
		`{"state":"Idle"}`, `{"state":"sleeping"}`, `{"state":""}`, `{}`, `{"state":1}`,
	} {
		_, err := RawRequest{Name: "Report", Body: json.RawMessage(body)}.Decode()
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest {
			t.Errorf("Report %s: got %v, want bad_request", body, err)
		}
	}
}
