package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/hangup"
	"github.com/krad-ade/krad/internal/sockpair"
	"github.com/krad-ade/krad/kradtest/apitest"
	"github.com/krad-ade/krad/kradtest/floodtest"
	"github.com/krad-ade/krad/kradtest/testbin"
)

const (
	busHex  = "6f1c0d9e2b7a4c58e3f09a1d7b6c2e40"
	leadHex = "0123456789abcdef0123456789abcdef"
)

func mustToken(t testing.TB, s string) api.Token {
	t.Helper()
	tok, err := api.ParseToken(s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// testApp is an app behind the bus with the environment "main", where terminal 1 is a lead whose
// worker is terminal 2 and terminal 3 is a plain shell, and the SSH environment "build", whose
// terminal 1 is a plain shell. Handle answers through fn.
type testApp struct {
	fn   func(ctx context.Context, c *Call) api.Answer
	fail error // when set, Handle returns it
	// failWhenDone, when set, makes Handle wait for its ctx to end and return its error.
	failWhenDone bool
	handled      atomic.Int32
}

func (a *testApp) Facts(_ context.Context, from api.Caller, req api.Request) (Facts, error) {
	switch from.Kind {
	case api.CallerClient:
		return Facts{Role: access.RoleClient}, nil
	case api.CallerGit:
		return Facts{Role: access.RoleGit}, nil
	}
	if from.Terminal == (api.TerminalID{Environment: "build", Terminal: 1}) {
		return Facts{Role: access.RoleTerminal}, nil
	}
	if from.Terminal.Environment != "main" || from.Terminal.Terminal > 3 {
		return Facts{}, api.Errorf(api.CodeForbidden, "%s is not a terminal of this app", from.Terminal)
	}
	f := Facts{Role: access.RoleTerminal}
	if from.Terminal.Terminal == 1 {
		f.Role = access.RoleLead
	}
	if target, ok := req.Target(); ok {
		switch {
		case target > 3:
			f.Target = TargetMissing
		case from.Terminal.Terminal == 1 && target == 2:
			f.Target = TargetOwnWorker
		default:
			f.Target = TargetOther
		}
	}
	return f, nil
}

func (a *testApp) Handle(ctx context.Context, c *Call) (api.Answer, error) {
	a.handled.Add(1)
	if a.fail != nil {
		return api.Answer{}, a.fail
	}
	if a.failWhenDone {
		<-ctx.Done()
		return api.Answer{}, fmt.Errorf("wait: %w", ctx.Err())
	}
	if a.fn != nil {
		return a.fn(ctx, c), nil
	}
	return api.OK, nil
}

type bus struct {
	*Server
	app    *testApp
	cancel context.CancelFunc
	done   chan error
}

func startBus(t testing.TB, app *testApp, tweak func(*Config)) *bus {
	t.Helper()
	if app == nil {
		app = &testApp{}
	}
	cfg := Config{
		BusToken:  mustToken(t, busHex),
		LeadToken: mustToken(t, leadHex),
		Build:     "0.1.0",
		PID:       48211,
		Handler:   app,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	srv, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &bus{Server: srv, app: app, cancel: cancel, done: make(chan error, 1)}
	go func() { b.done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after its context was cancelled")
		}
	})
	return b
}

// roundTrip writes one raw line and returns the answer line, as nc would.
func roundTrip(t testing.TB, addr, line string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, line); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn) // the bus closes after its one answer
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return string(got)
}

func envelope(from, request string) string {
	return fmt.Sprintf(`{"api_version":1,"token":%q,"from":%s,"request":%s}`+"\n", busHex, from, request)
}

func errorCode(t testing.TB, answer string) api.ErrorCode {
	t.Helper()
	var a api.Answer
	if err := json.Unmarshal([]byte(answer), &a); err != nil {
		t.Fatalf("answer %q is not one JSON value: %v", answer, err)
	}
	var e *api.Error
	if err, ok := a.Err().(*api.Error); ok {
		e = err
	} else {
		return ""
	}
	return e.Code
}

func TestHello(t *testing.T) {
	b := startBus(t, nil, nil)
	got := roundTrip(t, b.Addr(), envelope(`"Client"`, `"Hello"`))
	want := `{"Hello":{"api_version":1,"build":"0.1.0","pid":48211}}` + "\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !strings.HasPrefix(b.Addr(), "127.0.0.1:") {
		t.Errorf("the bus listens on %s, want 127.0.0.1", b.Addr())
	}
}

// TestClientHelloFastPath: the line api.Client writes for a Client's Hello is answered, and the
// same line with the token's last digit changed is not.
func TestClientHelloFastPath(t *testing.T) {
	b := startBus(t, nil, nil)
	line, err := json.Marshal(api.Envelope{Token: mustToken(t, busHex), From: api.FromClient, Request: api.NewRequest(api.Hello, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, b.Addr(), string(line)+"\n"); !strings.HasPrefix(got, `{"Hello":`) {
		t.Errorf("got %q, want a Hello answer", got)
	}
	wrong := strings.Replace(string(line), busHex, busHex[:31]+"1", 1)
	if got := roundTrip(t, b.Addr(), wrong+"\n"); errorCode(t, got) != api.CodeUnauthorized {
		t.Errorf("a wrong token got %q, want unauthorized", got)
	}
}

func TestHelloWithoutPID(t *testing.T) {
	b := startBus(t, nil, func(c *Config) { c.PID = 0 })
	got := roundTrip(t, b.Addr(), envelope(`"Client"`, `"Hello"`))
	if want := `{"Hello":{"api_version":1,"build":"0.1.0"}}` + "\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestHelloWhileAppBusy: the bus answers Hello itself, so a handler that blocks every request
// does not delay it.
func TestHelloWhileAppBusy(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	app := &testApp{fn: func(ctx context.Context, c *Call) api.Answer {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return api.OK
	}}
	b := startBus(t, app, nil)
	// Occupy the app with requests that block.
	for range 8 {
		conn, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, envelope(`{"Terminal":{"environment":"main","terminal":3}}`, `"List"`))
	}
	deadline := time.Now().Add(5 * time.Second)
	for app.handled.Load() < 8 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if app.handled.Load() < 8 {
		t.Fatal("the blocking requests did not reach the app")
	}
	got := roundTrip(t, b.Addr(), envelope(`{"Terminal":{"environment":"main","terminal":3}}`, `"Hello"`))
	if !strings.HasPrefix(got, `{"Hello":`) {
		t.Errorf("got %q while the app was busy, want a Hello answer", got)
	}
}

func TestOrderOfChecks(t *testing.T) {
	b := startBus(t, nil, nil)
	term := `{"Terminal":{"environment":"main","terminal":3}}`
	lead := `{"Terminal":{"environment":"main","terminal":1}}`
	tests := []struct {
		name, line string
		want       api.ErrorCode // "" means not an error
		message    string        // when set, the exact message
	}{
		{"not JSON", "hello there\n", api.CodeBadRequest, ""},
		{"JSON not an object", `[1,2,3]` + "\n", api.CodeBadRequest, ""},
		{"JSON string", `"Hello"` + "\n", api.CodeBadRequest, ""},
		{"empty line", "\n", api.CodeBadRequest, ""},
		{"unknown request", envelope(`"Client"`, `"Launch"`), api.CodeBadRequest, ""},
		{"request with two keys", envelope(term, `{"Wait":{"target":2},"Read":{"target":2}}`), api.CodeBadRequest, ""},
		{"request of wrong type", envelope(term, `42`), api.CodeBadRequest, ""},
		{"bare request that has fields", envelope(term, `"Wait"`), api.CodeBadRequest, ""},
		{"fields on a bare request", envelope(term, `{"List":{}}`), api.CodeBadRequest, ""},
		{"target is a string", envelope(term, `{"Wait":{"target":"2"}}`), api.CodeBadRequest, ""},
		{"target is zero", envelope(term, `{"Read":{"target":0}}`), api.CodeBadRequest, ""},
		{"unknown field", envelope(term, `{"Read":{"target":2,"colour":"red"}}`), api.CodeBadRequest, ""},
		{"negative timeout", envelope(term, `{"Wait":{"target":2,"timeout_secs":-1}}`), api.CodeBadRequest, ""},
		{"enter is a string", envelope(lead, `{"Send":{"target":2,"text":"hi","enter":"yes"}}`), api.CodeBadRequest, ""},
		{"request missing", fmt.Sprintf(`{"api_version":1,"token":%q,"from":"Client"}`+"\n", busHex), api.CodeBadRequest, ""},
		{"from missing", fmt.Sprintf(`{"api_version":1,"token":%q,"request":"Hello"}`+"\n", busHex), api.CodeBadRequest, ""},
		{"from unknown", envelope(`"Robot"`, `"Hello"`), api.CodeBadRequest, ""},
		{"from unknown object", envelope(`{"Robot":{"environment":"main","terminal":1}}`, `"Hello"`), api.CodeBadRequest, ""},
		{"from terminal without number", envelope(`{"Terminal":{"environment":"main"}}`, `"Hello"`), api.CodeBadRequest, ""},
		{"token is a number", `{"api_version":1,"token":7,"from":"Client","request":"Hello"}` + "\n", api.CodeBadRequest, ""},
		{"api_version is a string", fmt.Sprintf(`{"api_version":"1","token":%q,"from":"Client","request":"Hello"}`+"\n", busHex), api.CodeBadRequest, ""},
		{"empty token", `{"api_version":1,"token":"","from":"Client","request":"Hello"}` + "\n", api.CodeUnauthorized, ""},
		{"missing token", `{"api_version":1,"from":"Client","request":"Hello"}` + "\n", api.CodeUnauthorized, ""},
		{"short token", `{"api_version":1,"token":"6f1c0d9e","from":"Client","request":"Hello"}` + "\n", api.CodeUnauthorized, ""},
		{"wrong token", `{"api_version":1,"token":"ffffffffffffffffffffffffffffffff","from":"Client","request":"Hello"}` + "\n", api.CodeUnauthorized, ""},
		{"lead token as a Client", `{"api_version":1,"token":"` + leadHex + `","from":"Client","request":"Hello"}` + "\n", api.CodeUnauthorized, ""},
		{"wrong token before version", `{"api_version":2,"token":"ffffffffffffffffffffffffffffffff","from":"Client","request":"Hello"}` + "\n", api.CodeUnauthorized, ""},
		{"version 0", fmt.Sprintf(`{"api_version":0,"token":%q,"from":"Client","request":"Hello"}`+"\n", busHex), api.CodeUnsupportedAPIVersion, "This app serves the agents API v1, not v0"},
		{"version 2", fmt.Sprintf(`{"api_version":2,"token":%q,"from":"Client","request":"Hello"}`+"\n", busHex), api.CodeUnsupportedAPIVersion, "This app serves the agents API v1, not v2"},
		{"version 2 with a request v1 does not know", fmt.Sprintf(`{"api_version":2,"token":%q,"from":"Client","request":"Teleport"}`+"\n", busHex), api.CodeUnsupportedAPIVersion, ""},
		{"version missing is 1", fmt.Sprintf(`{"token":%q,"from":"Client","request":"Hello"}`+"\n", busHex), "", ""},
		{"lead caller with the bus token", envelope(`{"Lead":{"environment":"main","terminal":1}}`, `"List"`), api.CodeUnauthorized, "only a lead the user named can call as a lead"},
		{"terminal that does not exist", envelope(`{"Terminal":{"environment":"main","terminal":99}}`, `"List"`), api.CodeForbidden, ""},
		{"client may list", envelope(`"Client"`, `"List"`), "", ""},
		{"client may list all", envelope(`"Client"`, `"ListAll"`), "", ""},
		{"client may not read", envelope(`"Client"`, `{"Read":{"target":2}}`), api.CodeForbidden, ""},
		{"client may not wait", envelope(`"Client"`, `{"Wait":{"target":2,"timeout_secs":1}}`), api.CodeForbidden, ""},
		{"client may not spawn", envelope(`"Client"`, `{"Spawn":{"title":"x"}}`), api.CodeForbidden, ""},
		{"client may not check", envelope(`"Client"`, `{"Check":{"target":2}}`), api.CodeForbidden, ""},
		{"terminal may not send", envelope(term, `{"Send":{"target":2,"text":"hi"}}`), api.CodeForbidden, ""},
		{"lead may send to its worker", envelope(lead, `{"Send":{"target":2,"text":"hi"}}`), "", ""},
		{"lead may not send to another terminal", envelope(lead, `{"Send":{"target":3,"text":"hi"}}`), api.CodeForbidden, ""},
		{"lead sends to a terminal that does not exist", envelope(lead, `{"Send":{"target":9,"text":"hi"}}`), api.CodeNotFound, ""},
		{"git may not say hello", envelope(`{"Git":"main"}`, `"Hello"`), api.CodeForbidden, ""},
		{"terminal may not askpass", envelope(term, `{"Askpass":{}}`), api.CodeForbidden, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := roundTrip(t, b.Addr(), tt.line)
			if !strings.HasSuffix(got, "\n") || strings.Count(got, "\n") != 1 {
				t.Fatalf("answer %q is not exactly one line", got)
			}
			if code := errorCode(t, got); code != tt.want {
				t.Fatalf("got %s, want code %q", strings.TrimSpace(got), tt.want)
			}
			if tt.message != "" {
				var a api.Answer
				_ = json.Unmarshal([]byte(got), &a)
				if e := a.Err().(*api.Error); e.Message != tt.message {
					t.Errorf("got message %q, want %q", e.Message, tt.message)
				}
			}
			if strings.Contains(got, busHex) || strings.Contains(got, leadHex) {
				t.Errorf("the answer %q contains a token", got)
			}
			// The bus keeps serving after every bad input.
			if h := roundTrip(t, b.Addr(), envelope(`"Client"`, `"Hello"`)); !strings.HasPrefix(h, `{"Hello":`) {
				t.Errorf("after %s, Hello got %q", tt.name, h)
			}
		})
	}
}

func TestLeadCallerWithLeadToken(t *testing.T) {
	app := &testApp{fn: func(_ context.Context, c *Call) api.Answer {
		if c.Role != access.RoleLead {
			return api.ErrorAnswer(api.Errorf(api.CodeInternal, "role %s", c.Role))
		}
		return api.OK
	}}
	b := startBus(t, app, nil)
	line := fmt.Sprintf(`{"api_version":1,"token":%q,"from":{"Lead":{"environment":"main","terminal":1}},"request":{"Send":{"target":2,"text":"go"}}}`+"\n", leadHex)
	if got := roundTrip(t, b.Addr(), line); got != `"Ok"`+"\n" {
		t.Errorf("got %q, want \"Ok\"", got)
	}
}

// TestHandlerErrorsBecomeAnswers: the bus alone turns a handler's error into an answer. An
// *api.Error goes as it is, api.ErrTimedOut (wrapped too) as "TimedOut", and anything else as
// internal, named after the request, cut short, and logged in full with the request and caller.
func TestHandlerErrorsBecomeAnswers(t *testing.T) {
	long := strings.Repeat("x", 1000)
	tests := []struct {
		name string
		err  error
		want string // the answer line, or its prefix when it ends in "…"
	}{
		{"api error", api.Errorf(api.CodeConflict, "busy"), `{"Error":{"code":"conflict","message":"busy"}}` + "\n"},
		{"wrapped api error", fmt.Errorf("step: %w", api.NoTerminal("main", 9)), `{"Error":{"code":"not_found","message":"no terminal main:9: see krad list","reason":"no_terminal"}}` + "\n"},
		{"timed out", fmt.Errorf("wait: %w", api.ErrTimedOut), `"TimedOut"` + "\n"},
		{"other", errors.New("tmux died"), `{"Error":{"code":"internal","message":"List failed: tmux died"}}` + "\n"},
		{"long other", errors.New(long), `{"Error":{"code":"internal","message":"List failed: xxx…`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log lockedBuffer
			b := startBus(t, &testApp{fail: tt.err}, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
			got := roundTrip(t, b.Addr(), envelope(`{"Terminal":{"environment":"main","terminal":3}}`, `"List"`))
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(got, prefix) || len(got) > 400 {
					t.Errorf("got %q, want an answer of at most 400 bytes that starts %q", got, prefix)
				}
			} else if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			var e *api.Error
			logged := strings.Contains(log.String(), "request failed")
			if internal := !errors.As(tt.err, &e) && !errors.Is(tt.err, api.ErrTimedOut); logged != internal {
				t.Errorf("logged %v, want %v: only an internal error is logged; log:\n%s", logged, internal, log.String())
			}
			if tt.name == "long other" && !strings.Contains(log.String(), long) {
				t.Error("the log lacks the internal error in full")
			}
		})
	}
}

// TestErrorsBeforeTheCall: an error found before the call is known (the line, the order of
// checks) becomes an answer in the same one place as a handler's, without a request to name: an
// *api.Error as it is, and anything else, which would be the bus's own fault, as an internal
// error that says no more and is logged.
func TestErrorsBeforeTheCall(t *testing.T) {
	var log lockedBuffer
	s := &Server{cfg: Config{Logger: slog.New(slog.NewTextHandler(&log, nil))}}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{api.Errorf(api.CodeUnauthorized, "no"), `{"Error":{"code":"unauthorized","message":"no"}}`},
		{fmt.Errorf("read: %w", api.Errorf(api.CodeBadRequest, "too long")), `{"Error":{"code":"bad_request","message":"too long"}}`},
		{errors.New("connection reset"), `{"Error":{"code":"internal","message":"the app failed to answer; see its log"}}`},
	} {
		line, err := s.answerError(nil, tt.err).MarshalJSON()
		if err != nil || string(line) != tt.want {
			t.Errorf("answerError(nil, %v) = %s, %v; want %s", tt.err, line, err, tt.want)
		}
	}
	if got := log.String(); strings.Count(got, "level=ERROR") != 1 || !strings.Contains(got, "connection reset") {
		t.Errorf("want the internal error logged once, in full; log:\n%s", got)
	}
}

func TestLineLimit(t *testing.T) {
	b := startBus(t, nil, nil)
	t.Run("exactly 64 KiB is read", func(t *testing.T) {
		// An envelope padded with spaces to exactly MaxRequestLine bytes before the newline.
		line := strings.TrimSuffix(envelope(`"Client"`, `"Hello"`), "\n")
		line = line[:len(line)-1] + strings.Repeat(" ", api.MaxRequestLine-len(line)) + "}"
		if len(line) != api.MaxRequestLine {
			t.Fatalf("built a line of %d bytes", len(line))
		}
		if got := roundTrip(t, b.Addr(), line+"\n"); !strings.HasPrefix(got, `{"Hello":`) {
			t.Errorf("got %q, want a Hello answer", got)
		}
	})
	t.Run("one byte more is bad_request, answered before the rest is sent", func(t *testing.T) {
		conn, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Send the limit plus one byte, and keep the line open: the bus must answer without
		// waiting for a newline or for more bytes.
		if _, err := conn.Write([]byte(strings.Repeat("x", api.MaxRequestLine+1))); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			t.Fatalf("no answer to an over-long line: %v", err)
		}
		if code := errorCode(t, got); code != api.CodeBadRequest {
			t.Errorf("got %q, want bad_request", got)
		}
	})
}

func TestNoLineInTime(t *testing.T) {
	b := startBus(t, nil, func(c *Config) { c.LineTimeout = 300 * time.Millisecond })
	conn, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte(`{"api_version":1,`)) // half a line, then silence
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the bus did not close the connection: %v", err)
	}
	if code := errorCode(t, string(got)); code != api.CodeBadRequest {
		t.Errorf("got %q, want bad_request", got)
	}
	if !strings.Contains(string(got), "within 300ms") {
		t.Errorf("got %q, want it to say the line did not arrive in time", got)
	}
}

// TestSilentConnections: 1,000 clients connect and say nothing; others are still answered. The
// gate holds the newest 512: the oldest are answered unavailable at once, the others bad_request
// after the line timeout; all are closed, leaving no goroutine behind.
func TestSilentConnections(t *testing.T) {
	before := runtime.NumGoroutine()
	b := startBus(t, nil, func(c *Config) { c.LineTimeout = 2 * time.Second })
	conns := make([]net.Conn, 0, 1000)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 1000 {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	for range 10 {
		if got := roundTrip(t, b.Addr(), envelope(`"Client"`, `"Hello"`)); !strings.HasPrefix(got, `{"Hello":`) {
			t.Fatalf("with 1,000 silent connections, Hello got %q", got)
		}
	}
	// Every silent connection gets its answer and is closed by the bus.
	var wg sync.WaitGroup
	var timedOut, dropped atomic.Int32
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
			got, err := io.ReadAll(c)
			switch {
			case err != nil:
			case strings.Contains(string(got), "bad_request"):
				timedOut.Add(1)
			case strings.Contains(string(got), "unavailable"):
				dropped.Add(1)
			}
		}()
	}
	wg.Wait()
	// The first Hello may make the gate drop one more.
	if timedOut.Load()+dropped.Load() != 1000 || timedOut.Load() > DefaultPendingConns {
		t.Errorf("of 1000 silent connections, %d were answered bad_request and %d unavailable, want at most %d and the rest",
			timedOut.Load(), dropped.Load(), DefaultPendingConns)
	}
	waitGoroutines(t, before+5)
}

func waitGoroutines(t *testing.T, atMost int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > atMost && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > atMost {
		t.Errorf("%d goroutines, want at most %d", n, atMost)
	}
}

// TestDeadline: a handler that does not answer in time gets "TimedOut" at the deadline, and its
// context is cancelled. Wait with timeout_secs 0 has the shortest deadline: 0 s plus one second.
func TestDeadline(t *testing.T) {
	cancelled := make(chan struct{})
	app := &testApp{fn: func(ctx context.Context, c *Call) api.Answer {
		<-ctx.Done()
		close(cancelled)
		return api.OK
	}}
	b := startBus(t, app, nil)
	start := time.Now()
	got := roundTrip(t, b.Addr(), envelope(`{"Terminal":{"environment":"main","terminal":3}}`, `{"Wait":{"target":2,"timeout_secs":0}}`))
	if got != `"TimedOut"`+"\n" {
		t.Errorf("got %q, want \"TimedOut\"", got)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("TimedOut came after %v, before the 1 s deadline", took)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Error("the handler's context was not cancelled at the deadline")
	}
}

// TestEndedRequestIsNoFailure: a handler that returns its ctx's error once the deadline passed
// or the client left has not failed: the deadline is answered "TimedOut", and nothing is logged
// as a failed request either way.
func TestEndedRequestIsNoFailure(t *testing.T) {
	var log lockedBuffer
	b := startBus(t, &testApp{failWhenDone: true}, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	got := roundTrip(t, b.Addr(), envelope(`{"Terminal":{"environment":"main","terminal":3}}`, `{"Wait":{"target":2,"timeout_secs":0}}`))
	if got != `"TimedOut"`+"\n" {
		t.Errorf("at the deadline: got %q, want \"TimedOut\"", got)
	}
	conn := dialPath(t, b, false)
	_, _ = io.WriteString(conn, envelope(`{"Terminal":{"environment":"main","terminal":3}}`, `{"Wait":{"target":2,"timeout_secs":600}}`))
	time.Sleep(200 * time.Millisecond)
	conn.Close()
	time.Sleep(500 * time.Millisecond) // the bus sees the close and cancels
	if strings.Contains(log.String(), "request failed") {
		t.Errorf("an ended request was logged as a failure:\n%s", log.String())
	}
}

// dialPath opens a connection to the bus through its listener, or through Pipe; the test's end
// closes it.
func dialPath(t *testing.T, b *bus, pipe bool) net.Conn {
	t.Helper()
	var c net.Conn
	var err error
	if pipe {
		waitServing(t, b)
		c, err = b.Pipe(context.Background(), access.Loopback)
	} else {
		c, err = net.Dial("tcp", b.Addr())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func pathName(pipe bool) string {
	if pipe {
		return "pipe"
	}
	return "tcp"
}

// heldRequest is the request of a test app whose handler holds it until it is cancelled.
type heldRequest struct {
	started, cancelled chan struct{}
}

// holdingApp is a test app that holds its one request until the request is cancelled.
func holdingApp() (*testApp, *heldRequest) {
	h := &heldRequest{started: make(chan struct{}), cancelled: make(chan struct{})}
	return &testApp{fn: func(ctx context.Context, c *Call) api.Answer {
		close(h.started)
		<-ctx.Done()
		close(h.cancelled)
		return api.OK
	}}, h
}

// reached waits for the request to reach the app.
func (h *heldRequest) reached(t *testing.T) {
	t.Helper()
	select {
	case <-h.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the request did not reach the app")
	}
}

// stillHeld checks that the request is not cancelled, after the bus has had time to look at the
// client's end several times; what is what the client did.
func (h *heldRequest) stillHeld(t *testing.T, what string) {
	t.Helper()
	select {
	case <-h.cancelled:
		t.Fatalf("%s cancelled the request", what)
	case <-time.After(5 * hangup.PollEvery):
	}
}

// cancelledBy checks that the request is cancelled within 10 s; what is what the client did.
func (h *heldRequest) cancelledBy(t *testing.T, what string) {
	t.Helper()
	select {
	case <-h.cancelled:
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not cancel the request", what)
	}
}

// TestLeavingCancels: a client that closes its connection while its Wait waits cancels it,
// through either path, whether it shut down its writing side first (a half-close, which alone
// cancels nothing) or not.
func TestLeavingCancels(t *testing.T) {
	for _, pipe := range []bool{false, true} {
		for _, halfFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/half-close first=%v", pathName(pipe), halfFirst), func(t *testing.T) {
				app, held := holdingApp()
				b := startBus(t, app, nil)
				conn := dialPath(t, b, pipe)
				_, _ = io.WriteString(conn, envelope(`{"Terminal":{"environment":"main","terminal":3}}`, `{"Wait":{"target":2,"timeout_secs":600}}`))
				held.reached(t)
				if halfFirst {
					_ = conn.(interface{ CloseWrite() error }).CloseWrite()
					held.stillHeld(t, "a half-close")
				}
				conn.Close()
				held.cancelledBy(t, "closing the connection")
			})
		}
	}
}

// needNC returns OpenBSD nc's path; it skips the test when nc is missing, except in CI, where it
// fails.
func needNC(t *testing.T) string {
	t.Helper()
	return testbin.Need(t, "nc", "netcat-openbsd")
}

// TestNCKilledCancels: a real `nc -N` sends a Wait and shuts down its writing side, which
// cancels nothing; killed, it closes its socket, which cancels the Wait.
func TestNCKilledCancels(t *testing.T) {
	nc := needNC(t)
	app, held := holdingApp()
	b := startBus(t, app, nil)
	host, port, _ := net.SplitHostPort(b.Addr())
	cmd := exec.Command(nc, "-N", host, port)
	cmd.Stdin = strings.NewReader(envelope(`{"Terminal":{"environment":"main","terminal":3}}`, `{"Wait":{"target":2,"timeout_secs":600}}`))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	held.reached(t)
	held.stillHeld(t, "nc -N's half-close")
	_ = cmd.Process.Kill()
	held.cancelledBy(t, "killing nc")
}

// TestHalfCloseGetsItsAnswer: a client that shuts down its writing side after its line, as
// `nc -N` does, gets its answer, or its stream, for the requests that wait: Read, Wait, Check
// with a wait, SubscribeAgents. Through the listener with the real nc -N, and through Pipe. The
// app answers after the bus has looked at the client's end several times.
func TestHalfCloseGetsItsAnswer(t *testing.T) {
	nc := needNC(t)
	app := &testApp{fn: func(ctx context.Context, c *Call) api.Answer {
		for i := range 3 {
			if c.Stream != nil {
				a, _ := api.NewAnswer("Msg", i)
				c.Stream.Send(a)
			}
			select {
			case <-ctx.Done():
				return api.Answer{}
			case <-time.After(2 * hangup.PollEvery):
			}
		}
		a, _ := api.NewAnswer("Done", c.Request.Name)
		return a
	}}
	b := startBus(t, app, nil)
	term := `{"Terminal":{"environment":"main","terminal":3}}`
	tests := []struct{ request, want string }{
		{`{"Read":{"target":2}}`, `{"Done":"Read"}` + "\n"},
		{`{"Wait":{"target":2,"timeout_secs":60}}`, `{"Done":"Wait"}` + "\n"},
		{`{"Check":{"target":2,"wait_secs":60}}`, `{"Done":"Check"}` + "\n"},
		{`"SubscribeAgents"`, `{"Msg":0}` + "\n" + `{"Msg":1}` + "\n" + `{"Msg":2}` + "\n"},
	}
	for _, tt := range tests {
		line := envelope(term, tt.request)
		t.Run(tt.request+"/nc -N", func(t *testing.T) {
			host, port, _ := net.SplitHostPort(b.Addr())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, nc, "-N", host, port)
			cmd.Stdin = strings.NewReader(line)
			out, err := cmd.Output()
			if string(out) != tt.want || err != nil {
				t.Errorf("nc -N got %q, %v; want %q", out, err, tt.want)
			}
		})
		t.Run(tt.request+"/pipe", func(t *testing.T) {
			conn := dialPath(t, b, true)
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			_, _ = io.WriteString(conn, line)
			_ = conn.(interface{ CloseWrite() error }).CloseWrite()
			if got, err := io.ReadAll(conn); string(got) != tt.want || err != nil {
				t.Errorf("a half-closed pipe got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func subscribe(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_, _ = io.WriteString(conn, envelope(`"Client"`, `"SubscribeAgents"`))
	return conn, bufio.NewReader(conn)
}

// TestStream: one line per message until the client closes; a subscriber that stops reading is
// dropped once its buffer is full, and the others keep receiving every message.
func TestStream(t *testing.T) {
	var mu sync.Mutex
	var streams []*Stream
	app := &testApp{fn: func(ctx context.Context, c *Call) api.Answer {
		mu.Lock()
		streams = append(streams, c.Stream)
		mu.Unlock()
		<-ctx.Done()
		return api.Answer{}
	}}
	b := startBus(t, app, func(c *Config) { c.StreamBuffer = 16 })
	waitStreams := func(want int) {
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			n := len(streams)
			mu.Unlock()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the subscriptions did not reach the app")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	_, good := subscribe(t, b.Addr())
	waitStreams(1)
	subscribe(t, b.Addr()) // never read
	waitStreams(2)
	// Large messages, so the stuck subscriber's socket buffers fill and then its stream's. The
	// good subscriber reads each message before the next is sent.
	big := strings.Repeat("a", 32<<10)
	const messages = 1000
	for i := range messages {
		a, _ := api.NewAnswer("Msg", map[string]any{"n": i, "pad": big})
		if !streams[0].Send(a) {
			t.Fatalf("the reading subscriber was dropped at message %d", i)
		}
		streams[1].Send(a)
		line, err := good.ReadString('\n')
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := fmt.Sprintf(`{"Msg":{"n":%d,"pad":%q}}`+"\n", i, big); line != want {
			t.Fatalf("message %d: got %.60q…", i, line)
		}
	}
	if !isGone(streams[1]) {
		t.Errorf("the subscriber that never read was not dropped after %d messages", messages)
	}
	if isGone(streams[0]) {
		t.Errorf("the reading subscriber is gone")
	}
}

func isGone(s *Stream) bool {
	select {
	case <-s.Gone():
		return true
	default:
		return false
	}
}

// TestPipe: a connection through Pipe goes through the same checks as one through the listener,
// and half-closes like TCP.
func TestPipe(t *testing.T) {
	b := startBus(t, nil, nil)
	deadline := time.Now().Add(5 * time.Second)
	var conn net.Conn
	var err error
	for time.Now().Before(deadline) {
		if conn, err = b.Pipe(context.Background(), access.Loopback); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // Serve is starting
	}
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(conn, envelope(`"Client"`, `"Hello"`))
	_ = conn.(interface{ CloseWrite() error }).CloseWrite() // as nc -N does: the answer still comes
	got, err := io.ReadAll(conn)
	if err != nil || !strings.HasPrefix(string(got), `{"Hello":`) {
		t.Errorf("Hello through a pipe: %q, %v", got, err)
	}
	bad, _ := b.Pipe(context.Background(), access.Loopback)
	defer bad.Close()
	_ = bad.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(bad, `{"api_version":1,"token":"ffffffffffffffffffffffffffffffff","from":"Client","request":"Hello"}`+"\n")
	if got, _ := io.ReadAll(bad); errorCode(t, string(got)) != api.CodeUnauthorized {
		t.Errorf("a wrong token through a pipe: %q, want unauthorized", got)
	}
}

// TestPipeWhileStopping: Pipes opened as Serve stops either are served (answered, or closed by
// the stop) or are refused with ErrNotServing; Serve waits for every one it took, and none comes
// after.
func TestPipeWhileStopping(t *testing.T) {
	for range 20 {
		b := startBus(t, nil, nil)
		for {
			conn, err := b.Pipe(context.Background(), access.Loopback)
			if err == nil {
				conn.Close()
				break
			}
			time.Sleep(time.Millisecond) // Serve is starting
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					conn, err := b.Pipe(context.Background(), access.Loopback)
					if errors.Is(err, ErrNotServing) {
						return
					}
					if err != nil {
						t.Errorf("Pipe: %v", err)
						return
					}
					_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
					_, _ = io.WriteString(conn, envelope(`"Client"`, `"Hello"`))
					got, err := io.ReadAll(conn)
					conn.Close()
					if errors.Is(err, os.ErrDeadlineExceeded) { // a reset is the stop's close
						t.Errorf("a pipe the bus took was never served: %v", err)
						return
					}
					if len(got) > 0 && !strings.HasPrefix(string(got), `{"Hello":`) {
						t.Errorf("a pipe's Hello got %q", got)
						return
					}
				}
			}()
		}
		time.Sleep(time.Millisecond)
		b.cancel()
		if err := <-b.done; err != nil {
			t.Fatalf("Serve: %v", err)
		}
		b.done <- nil // for the cleanup
		wg.Wait()
		if _, err := b.Pipe(context.Background(), access.Loopback); !errors.Is(err, ErrNotServing) {
			t.Fatalf("Pipe after Serve returned: %v, want ErrNotServing", err)
		}
	}
}

// TestForwardSpeaksForItsEnvironment: a connection through the forward of environment build may
// name build's terminals and Git caller and nothing else, whatever token it holds: every request
// as this computer's terminal, as a Lead (with the real lead token), as Client (the Hello that the
// loopback answers at once included), or as another environment's Git caller is refused with
// forbidden before the app hears of it. The same lines from this computer's loopback go through.
func TestForwardSpeaksForItsEnvironment(t *testing.T) {
	app := &testApp{}
	var log lockedBuffer
	b := startBus(t, app, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	waitServing(t, b)
	send := func(origin access.Origin, tok string, from api.Caller, req api.Request) string {
		t.Helper()
		conn, err := b.Pipe(context.Background(), origin)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		line, err := json.Marshal(api.Envelope{APIVersion: api.Version, Token: mustToken(t, tok), From: from, Request: req})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write(append(line, '\n'))
		got, _ := bufio.NewReader(conn).ReadString('\n')
		return got
	}
	build := access.FromForward("build")
	mainLead := api.FromTerminal(api.TerminalID{Environment: "main", Terminal: 1})
	refused := []struct {
		tok  string
		from api.Caller
	}{
		{busHex, mainLead},
		{busHex, api.FromTerminal(api.TerminalID{Environment: "main", Terminal: 3})},
		{busHex, api.FromTerminal(api.TerminalID{Environment: "other", Terminal: 1})},
		{leadHex, api.Caller{Kind: api.CallerLead, Terminal: mainLead.Terminal}},
		{leadHex, api.Caller{Kind: api.CallerLead, Terminal: api.TerminalID{Environment: "build", Terminal: 1}}},
		{busHex, api.FromClient},
		{busHex, api.Caller{Kind: api.CallerGit, Environment: "main"}},
	}
	for _, c := range refused {
		for _, req := range apitest.Requests(2) {
			got := send(build, c.tok, c.from, req)
			if errorCode(t, got) != api.CodeForbidden || !strings.Contains(got, "forward of SSH environment build") {
				t.Errorf("%s %s through build's forward: %s, want forbidden naming the forward", c.from, req.Name, got)
			}
		}
	}
	if n := app.handled.Load(); n != 0 {
		t.Fatalf("the app handled %d requests that came through build's forward as another caller", n)
	}
	// A person learns that a host tried, and which: one warning naming the forward, not one a
	// request.
	if warned := strings.Count(log.String(), `level=WARN msg="a connection named a caller its origin may not speak for: refused" origin="the forward of SSH environment build"`); warned != 1 {
		t.Errorf("%d warnings name build's forward for its refused callers, want 1; the log:\n%s", warned, log.String())
	}
	// The Client's Hello, byte for byte the line the loopback answers at once, is refused too.
	hello := envelope(`"Client"`, `"Hello"`)
	conn, _ := b.Pipe(context.Background(), build)
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(conn, hello)
	got, _ := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if errorCode(t, got) != api.CodeForbidden {
		t.Errorf("a Client's Hello through build's forward: %s, want forbidden", got)
	}
	// build's own terminal may say Hello, and its List reaches the app; from this computer, the
	// callers above go through.
	build1 := api.FromTerminal(api.TerminalID{Environment: "build", Terminal: 1})
	if got := send(build, busHex, build1, api.NewRequest(api.Hello, nil)); !strings.HasPrefix(got, `{"Hello":`) {
		t.Errorf("Hello as build:1 through build's forward: %s", got)
	}
	if got := send(build, busHex, build1, api.NewRequest(api.List, nil)); got != `"Ok"`+"\n" || app.handled.Load() != 1 {
		t.Errorf("List as build:1 through build's forward: %s, with %d requests handled; want the app's answer", got, app.handled.Load())
	}
	if got := send(access.Loopback, busHex, mainLead, api.NewRequest(api.List, nil)); got != `"Ok"`+"\n" {
		t.Errorf("List as main:1 from this computer: %s, want the app's answer", got)
	}
	if got := roundTrip(t, b.Addr(), hello); !strings.HasPrefix(got, `{"Hello":`) {
		t.Errorf("a Client's Hello from this computer: %s", got)
	}
}

// TestStopWithStuckClients: whatever clients do, Serve returns soon after its context ends: a
// subscriber that stopped reading with its socket full (the bus's write to it blocks), a
// connection that sent nothing, one that sent half a line, a pipe that sent nothing, and a Wait
// that waits.
func TestStopWithStuckClients(t *testing.T) {
	subscribed := make(chan *Stream, 1)
	waiting := make(chan struct{}, 1)
	app := &testApp{fn: func(ctx context.Context, c *Call) api.Answer {
		if c.Stream != nil {
			subscribed <- c.Stream
		} else {
			waiting <- struct{}{}
		}
		<-ctx.Done()
		return api.Answer{}
	}}
	b := startBus(t, app, nil) // the spec's 10 s for the line
	subscribe(t, b.Addr())     // never read
	st := <-subscribed
	// Messages of 1 MiB until the bus's writer is stuck: messages then stay queued.
	a, _ := api.NewAnswer("Msg", map[string]any{"pad": strings.Repeat("a", 1<<20)})
	for i := 0; len(st.ch) < 2; i++ {
		if i == 200 || !st.Send(a) {
			t.Fatal("the subscriber's socket did not fill up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	dial := func(line string) {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_, _ = io.WriteString(c, line)
	}
	dial("")
	dial(`{"api_version":1,`)
	dial(envelope(`{"Terminal":{"environment":"main","terminal":3}}`, `{"Wait":{"target":2,"timeout_secs":600}}`))
	<-waiting
	p, err := b.Pipe(context.Background(), access.Loopback)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	start := time.Now()
	b.cancel()
	select {
	case <-b.done:
		b.done <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5 s of its context ending")
	}
	t.Logf("Serve returned %v after its context ended", time.Since(start))
}

// memInUse is the Go heap and goroutine stacks in use, garbage not yet collected included.
func memInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// TestFloodOfPartialLines is the attack, in process: thousands of connections, through
// the listener and through the forward of SSH environment build (Pipe), each holding 64,000
// bytes with no newline. The memory the bus holds stays within its budget, and it keeps
// answering a terminal's request and Hello, on both ways in, while the flood holds.
func TestFloodOfPartialLines(t *testing.T) {
	b := startBus(t, nil, nil)
	waitServing(t, b)
	runtime.GC()
	before := memInUse()

	build := access.FromForward("build")
	dial := func(pipe bool) (net.Conn, error) {
		if pipe {
			return b.Pipe(context.Background(), build)
		}
		return net.Dial("tcp", b.Addr())
	}
	const tcp, pipes = 4000, 1000
	f := floodtest.Start(t, floodtest.Options{
		Dial:    func(i int) (net.Conn, error) { return dial(i%5 == 4) },
		Conns:   tcp + pipes,
		Partial: 64000,
	})

	// While the flood goes on, and after it, a terminal's List and a Hello on each way in, and
	// the memory in use, sampled.
	ask := func(pipe bool, line string) string {
		c, err := dial(pipe)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(c, line)
		got, _ := io.ReadAll(c)
		return string(got)
	}
	asks := []struct {
		pipe        bool
		list, hello string
	}{
		{false, envelope(`{"Terminal":{"environment":"main","terminal":3}}`, `"List"`), envelope(`"Client"`, `"Hello"`)},
		{true, envelope(`{"Terminal":{"environment":"build","terminal":1}}`, `"List"`), envelope(`{"Terminal":{"environment":"build","terminal":1}}`, `"Hello"`)},
	}
	var peak uint64
	f.Probe(t, 20, 10*time.Millisecond, func() {
		for _, a := range asks {
			if got := ask(a.pipe, a.list); got != `"Ok"`+"\n" {
				t.Fatalf("during the flood (pipe %v), a terminal's List got %q", a.pipe, got)
			}
			if got := ask(a.pipe, a.hello); !strings.HasPrefix(got, `{"Hello":`) {
				t.Fatalf("during the flood (pipe %v), Hello got %q", a.pipe, got)
			}
		}
		peak = max(peak, memInUse())
	})
	grew := peak - min(peak, before)
	// The budget: for each origin, the lines and 4 KiB for each connection's goroutine and
	// socket; twice that, for the garbage the collector has yet to reclaim. And 1 KiB for each of
	// the flood's client connections, which this process holds too (0.6 KiB measured).
	budget := uint64(2*2*(DefaultPendingBytes+DefaultPendingConns*4<<10) + (tcp+pipes)*1<<10)
	t.Logf("memory in use: %.1f MiB before the flood, at most %.1f MiB more during it; the budget is %.1f MiB", mib(before), mib(grew), mib(budget))
	if grew > budget {
		t.Errorf("the flood took the memory in use %.1f MiB up, over the budget of %.1f MiB", mib(grew), mib(budget))
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// waitServing waits for Serve to take Pipes.
func waitServing(t *testing.T, b *bus) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := b.Pipe(context.Background(), access.Loopback)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGateDropsTheOldest: when the connections without their line reach a bound (bytes, then
// count), the one that has waited longest is dropped, answered unavailable, and the younger ones
// stay; a line of the longest length gets through.
func TestGateDropsTheOldest(t *testing.T) {
	// Three connections, and the smallest budget: two buffers of the longest line.
	b := startBus(t, nil, func(c *Config) { c.PendingConns, c.PendingBytes = 3, 1 })
	open := func(send string) net.Conn {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_, _ = io.WriteString(c, send)
		return c
	}
	waitHeld := func(n, bytes int) {
		t.Helper()
		g := b.listened.gate
		deadline := time.Now().Add(5 * time.Second)
		for {
			g.mu.Lock()
			gn, gb := g.n, g.held
			g.mu.Unlock()
			if gn == n && gb == bytes {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the gate holds %d connections and %d bytes, want %d and %d", gn, gb, n, bytes)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	answer := func(c net.Conn, wait time.Duration) string {
		_ = c.SetReadDeadline(time.Now().Add(wait))
		got, _ := io.ReadAll(c)
		return string(got)
	}
	longest := api.MaxRequestLine + 1 // the largest buffer

	// Bytes: two partial lines fill the budget; a third line needs room, and the oldest goes.
	first := open(strings.Repeat("x", 40000))
	waitHeld(1, longest)
	second := open(strings.Repeat("x", 40000))
	waitHeld(2, 2*longest)
	third := open("{")
	if got := answer(first, 5*time.Second); errorCode(t, got) != api.CodeUnavailable {
		t.Errorf("the oldest connection got %q, want unavailable", got)
	}
	waitHeld(2, longest+1<<10)

	// Count: a fourth makes three; a fifth, a Hello padded to the longest line, makes four and
	// the oldest goes. The Hello is answered.
	fourth := open("")
	waitHeld(3, longest+1<<10)
	line := strings.TrimSuffix(envelope(`"Client"`, `"Hello"`), "\n")
	line = line[:len(line)-1] + strings.Repeat(" ", api.MaxRequestLine-len(line)) + "}"
	if got := answer(open(line+"\n"), 5*time.Second); !strings.HasPrefix(got, `{"Hello":`) {
		t.Errorf("the longest line got %q, want a Hello answer", got)
	}
	if got := answer(second, 5*time.Second); errorCode(t, got) != api.CodeUnavailable {
		t.Errorf("the second oldest got %q, want unavailable", got)
	}
	waitHeld(2, 1<<10)
	for _, c := range []net.Conn{third, fourth} {
		if got := answer(c, 100*time.Millisecond); got != "" {
			t.Errorf("a younger connection got %q, want to be kept waiting", got)
		}
	}
}

// TestGatePassesOverUnread: when the gate must drop a connection, it passes over an older one
// whose socket holds bytes the bus has not read yet (its goroutine has not run: it waits on the
// bus, not on its client) and drops the oldest that waits on its client.
func TestGatePassesOverUnread(t *testing.T) {
	g := newGate(access.Loopback, 2, 0, slog.New(slog.DiscardHandler))
	pair := func() (client, server net.Conn) {
		client, server, err := sockpair.New()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close(); server.Close() })
		return client, server
	}
	c1, s1 := pair()
	_, s2 := pair()
	_, s3 := pair()
	_, _ = io.WriteString(c1, "a line that has arrived\n")
	oldest, second := g.enter(s1), g.enter(s2)
	g.enter(s3)
	if oldest.dropped.Load() || !second.dropped.Load() {
		t.Errorf("dropped: the oldest (unread bytes) %v, the second (waiting on its client) %v; want false, true",
			oldest.dropped.Load(), second.dropped.Load())
	}
}

// TestGateBytesDropOnlyHolders: when a growing line passes the byte bound, the gate drops the
// oldest connection that holds line bytes, and passes over older idle ones, which hold none:
// dropping them would free nothing.
func TestGateBytesDropOnlyHolders(t *testing.T) {
	g := newGate(access.Loopback, 10, 0, slog.New(slog.DiscardHandler)) // the smallest budget: two longest lines
	enter := func() *waiter {
		client, server, err := sockpair.New()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close(); server.Close() })
		return g.enter(server)
	}
	full := func(w *waiter) {
		for w.grow() {
		}
		if w.size != len(bufSizes)-1 {
			t.Fatalf("a waiter grew to size %d, want the largest", w.size)
		}
	}
	idle, holder, second := enter(), enter(), enter()
	full(holder)
	full(second)
	newest := enter()
	if !newest.grow() {
		t.Fatal("the newest connection could not take its first buffer")
	}
	if idle.dropped.Load() || !holder.dropped.Load() || second.dropped.Load() {
		t.Errorf("dropped: the idle oldest %v, the oldest holding a line %v, the second %v; want false, true, false",
			idle.dropped.Load(), holder.dropped.Load(), second.dropped.Load())
	}
	for _, w := range []*waiter{idle, holder, second, newest} {
		w.leave()
	}
}

// lockedBuffer is a bytes.Buffer that a logger and the test may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestOriginsHaveGatesOfTheirOwn: a flood of partial lines through the forward of environment a
// drops a's connections only: a line that environment b's terminal is still sending, older than
// the whole flood, gets through. The drops are logged once, naming a's forward.
func TestOriginsHaveGatesOfTheirOwn(t *testing.T) {
	var log lockedBuffer
	b := startBus(t, nil, func(c *Config) {
		c.PendingConns = 3
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	waitServing(t, b)
	pipe := func(o access.Origin) net.Conn {
		c, err := b.Pipe(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	line := envelope(`{"Terminal":{"environment":"b","terminal":1}}`, `"Hello"`)
	slow := pipe(access.FromForward("b"))
	_, _ = io.WriteString(slow, line[:20])
	time.Sleep(100 * time.Millisecond) // the bus has read it: b's connection waits on its client
	var flood []net.Conn
	for range 10 {
		c := pipe(access.FromForward("a"))
		_, _ = io.WriteString(c, "{")
		flood = append(flood, c)
	}
	if got, _ := io.ReadAll(flood[0]); errorCode(t, string(got)) != api.CodeUnavailable {
		t.Fatalf("the flood's oldest connection got %q, want unavailable", got)
	}
	_, _ = io.WriteString(slow, line[20:])
	if got, _ := bufio.NewReader(slow).ReadString('\n'); !strings.HasPrefix(got, `{"Hello":`) {
		t.Errorf("b's terminal, during a flood through a's forward, got %q, want its Hello answered", got)
	}
	if n := strings.Count(log.String(), `origin="the forward of SSH environment a"`); n != 1 {
		t.Errorf("%d log lines name a's forward, want one warning for its drops; the log:\n%s", n, log.String())
	}
}
