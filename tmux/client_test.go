package tmux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests play tmux's side of the stream by hand, to reach orders of events that a real tmux
// gives only by chance. tmux_test.go runs the same client against the real tmux.

// pipeEnd is the client's end of an in-memory stream.
type pipeEnd struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (e pipeEnd) Read(b []byte) (int, error)  { return e.r.Read(b) }
func (e pipeEnd) Write(b []byte) (int, error) { return e.w.Write(b) }
func (e pipeEnd) Close() error {
	e.r.Close()
	e.w.Close()
	return nil
}

// script is tmux's end: what it sends and what it reads, and the notifications the client passed on.
type script struct {
	t     *testing.T
	send  *io.PipeWriter
	lines *bufio.Reader
	c     *Client

	mu    sync.Mutex
	notes []Notification
}

func newScript(t *testing.T) *script {
	toClientR, toClientW := io.Pipe()
	fromClientR, fromClientW := io.Pipe()
	s := &script{t: t, send: toClientW, lines: bufio.NewReader(fromClientR)}
	s.c = New(pipeEnd{r: toClientR, w: fromClientW}, func(_ *Client, n Notification) {
		s.mu.Lock()
		s.notes = append(s.notes, n)
		s.mu.Unlock()
	})
	t.Cleanup(func() {
		s.c.Close()
		fromClientR.Close()
		<-s.c.Done()
	})
	return s
}

// write sends lines from tmux, each followed by a newline.
func (s *script) write(lines ...string) {
	s.t.Helper()
	if _, err := io.WriteString(s.send, strings.Join(lines, "\n")+"\n"); err != nil {
		s.t.Fatalf("write to the client: %v", err)
	}
}

// read returns the next command line the client sent, without its newline.
func (s *script) read() string {
	s.t.Helper()
	line, err := s.lines.ReadString('\n')
	if err != nil {
		s.t.Fatalf("read from the client: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}

func (s *script) notifications() []Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Notification(nil), s.notes...)
}

type result struct {
	lines []string
	err   error
}

// command runs c.Command in a goroutine and returns where its result will come.
func command(ctx context.Context, c *Client, args ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		lines, err := c.Command(ctx, args...)
		ch <- result{lines, err}
	}()
	return ch
}

func wait(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not return")
		return result{}
	}
}

func waitDone(t *testing.T, c *Client) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not end")
	}
}

func TestRepliesAndNotifications(t *testing.T) {
	s := newScript(t)
	ctx := context.Background()

	s.write("%begin 1 100 0", "%end 1 100 0", "%window-add @0", "%session-changed $0 main")
	first := command(ctx, s.c, "display", "-p", "#{session_name}")
	if got, want := s.read(), `"display" "-p" "#{session_name}"`; got != want {
		t.Fatalf("the client sent %s, want %s", got, want)
	}
	second := command(ctx, s.c, "list-windows")
	if got, want := s.read(), `"list-windows"`; got != want {
		t.Fatalf("the client sent %s, want %s", got, want)
	}
	s.write(
		"%output %0 $ \\033[1m",
		"%begin 2 101 1", "main", "%end 2 101 1",
		"%sessions-changed",
		// Inside a reply, lines that look like notifications or guards are output.
		"%begin 3 102 1", "%output %0 not a notification", "%begin 3 102 1", "%end 3 102 0", "%end 9 9 1", "", "%end 3 102 1",
		"%begin 4 103 0", "hook output", "%error 4 103 0",
	)
	if r := wait(t, first); r.err != nil || !reflect.DeepEqual(r.lines, []string{"main"}) {
		t.Errorf("first command: got %q, %v; want [main]", r.lines, r.err)
	}
	want := []string{"%output %0 not a notification", "%begin 3 102 1", "%end 3 102 0", "%end 9 9 1", ""}
	if r := wait(t, second); r.err != nil || !reflect.DeepEqual(r.lines, want) {
		t.Errorf("second command: got %q, %v; want %q", r.lines, r.err, want)
	}

	// A command after them all, so that every notification before its reply has been delivered.
	third := command(ctx, s.c, "refresh-client")
	s.read()
	s.write("%begin 5 104 1", "%end 5 104 1")
	if r := wait(t, third); r.err != nil || r.lines == nil || len(r.lines) != 0 {
		t.Errorf("third command: got %#v, %v; want an empty reply", r.lines, r.err)
	}
	wantNotes := []Notification{
		UnsolicitedReply{},
		WindowAdd{Window: 0},
		SessionChanged{Session: 0, Name: "main"},
		Output{Pane: 0, Data: []byte("$ \x1b[1m")},
		SessionsChanged{},
		UnsolicitedReply{Lines: []string{"hook output"}, Failed: true},
	}
	if got := s.notifications(); !reflect.DeepEqual(got, wantNotes) {
		t.Errorf("notifications:\ngot  %#v\nwant %#v", got, wantNotes)
	}
}

func TestCommandError(t *testing.T) {
	s := newScript(t)
	ch := command(context.Background(), s.c, "bogus")
	s.read()
	s.write("%begin 1 1 1", "parse error: unknown command: bogus", "%error 1 1 1")
	r := wait(t, ch)
	var ce *CommandError
	if !errors.As(r.err, &ce) || !reflect.DeepEqual(ce.Lines, []string{"parse error: unknown command: bogus"}) {
		t.Fatalf("got %q, %v; want a *CommandError with tmux's line", r.lines, r.err)
	}
	if got, want := r.err.Error(), "tmux: parse error: unknown command: bogus"; got != want {
		t.Errorf("got error %q, want %q", got, want)
	}
}

// A command whose ctx ends after it was sent gives up waiting; its reply, when it comes, is
// dropped, and the next command gets its own.
func TestCancelAfterSend(t *testing.T) {
	s := newScript(t)
	ctx, cancel := context.WithCancel(context.Background())
	slow := command(ctx, s.c, "wait-for", "x")
	s.read()
	cancel()
	if r := wait(t, slow); r.err != context.Canceled {
		t.Fatalf("cancelled command: got %q, %v; want context.Canceled", r.lines, r.err)
	}
	next := command(context.Background(), s.c, "display", "-p", "next")
	s.read()
	s.write("%begin 1 1 1", "slow's reply", "%end 1 1 1", "%begin 1 2 1", "next", "%end 1 2 1")
	if r := wait(t, next); r.err != nil || !reflect.DeepEqual(r.lines, []string{"next"}) {
		t.Fatalf("next command: got %q, %v; want [next]", r.lines, r.err)
	}
}

// A command whose ctx ends before the writer got to it is never sent.
func TestCancelBeforeSend(t *testing.T) {
	s := newScript(t)
	// Nobody reads the first line yet, so the writer is stuck writing it and the second waits.
	first := command(context.Background(), s.c, "display", "-p", "first")
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	second := command(ctx, s.c, "display", "-p", "second")
	time.Sleep(50 * time.Millisecond)
	cancel()
	if r := wait(t, second); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled command: got %q, %v; want context.Canceled", r.lines, r.err)
	}
	third := command(context.Background(), s.c, "display", "-p", "third")
	if got, want := s.read(), `"display" "-p" "first"`; got != want {
		t.Fatalf("the client sent %s, want %s", got, want)
	}
	if got, want := s.read(), `"display" "-p" "third"`; got != want {
		t.Fatalf("the client sent %s, want %s (the cancelled command must not be sent)", got, want)
	}
	s.write("%begin 1 1 1", "first", "%end 1 1 1", "%begin 1 2 1", "third", "%end 1 2 1")
	if r := wait(t, first); r.err != nil || !reflect.DeepEqual(r.lines, []string{"first"}) {
		t.Errorf("first command: got %q, %v; want [first]", r.lines, r.err)
	}
	if r := wait(t, third); r.err != nil || !reflect.DeepEqual(r.lines, []string{"third"}) {
		t.Errorf("third command: got %q, %v; want [third]", r.lines, r.err)
	}
}

func TestCommandWithEndedContext(t *testing.T) {
	s := newScript(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The error is ctx's alone: callers name the command ("tmux display: …"), once.
	if _, err := s.c.Command(ctx, "display"); err != context.Canceled {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestClose(t *testing.T) {
	s := newScript(t)
	pending := command(context.Background(), s.c, "wait-for", "x")
	s.read()
	if err := s.c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if r := wait(t, pending); r.err != ErrClosed {
		t.Errorf("pending command: got %q, %v; want ErrClosed", r.lines, r.err)
	}
	waitDone(t, s.c)
	if err := s.c.Err(); err != ErrClosed {
		t.Errorf("Err() = %v, want ErrClosed", err)
	}
	if _, err := s.c.Command(context.Background(), "display"); err != ErrClosed {
		t.Errorf("Command after Close: got %v, want ErrClosed", err)
	}
}

// How the stream ends decides Err, and commands still waiting fail with ErrClosed and the reason.
func TestStreamEnds(t *testing.T) {
	for _, tt := range []struct {
		name  string
		lines []string // then the stream closes
		check func(error) bool
		note  Notification // the last notification, if any
	}{
		{"exit", []string{"%exit"}, func(err error) bool {
			var e *ExitError
			return errors.As(err, &e) && e.Reason == ""
		}, Exit{}},
		{"exit with a reason", []string{"%exit server exited unexpectedly"}, func(err error) bool {
			var e *ExitError
			return errors.As(err, &e) && e.Reason == "server exited unexpectedly"
		}, Exit{Reason: "server exited unexpectedly"}},
		{"eof", nil, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, nil},
		{"eof inside a reply", []string{"%begin 1 1 1", "half"}, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, nil},
		{"exit inside a reply is output", []string{"%begin 1 1 1", "%exit"}, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, nil},
		{"reply with no command waiting", []string{"%begin 1 1 1", "%end 1 1 1", "%begin 1 2 1", "%end 1 2 1"}, func(err error) bool { return errors.Is(err, ErrProtocol) }, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(t)
			pending := command(context.Background(), s.c, "wait-for", "x")
			s.read()
			if len(tt.lines) > 0 {
				s.write(tt.lines...)
			}
			s.send.Close()
			waitDone(t, s.c)
			if err := s.c.Err(); !tt.check(err) {
				t.Errorf("Err() = %v (%T), not the error expected", err, err)
			}
			r := wait(t, pending)
			if tt.name == "reply with no command waiting" {
				r = result{err: s.c.Err()} // the pending command got the first reply
			} else if !errors.Is(r.err, ErrClosed) || !tt.check(r.err) {
				t.Errorf("pending command: got %v, want ErrClosed and the reason", r.err)
			}
			notes := s.notifications()
			if tt.note != nil && (len(notes) == 0 || !reflect.DeepEqual(notes[len(notes)-1], tt.note)) {
				t.Errorf("notifications %#v, want the last to be %#v", notes, tt.note)
			}
		})
	}
}

func TestLineTooLong(t *testing.T) {
	s := newScript(t)
	go func() {
		io.WriteString(s.send, "%output %1 "+strings.Repeat("x", MaxLine)+"\n")
	}()
	waitDone(t, s.c)
	if err := s.c.Err(); !errors.Is(err, ErrTooLong) {
		t.Errorf("Err() = %v, want ErrTooLong", err)
	}
}

// A line of exactly MaxLine bytes is read; the client keeps going.
func TestLineAtLimit(t *testing.T) {
	s := newScript(t)
	prefix := "%output %1 "
	s.write(prefix+strings.Repeat("y", MaxLine-len(prefix)), "%sessions-changed")
	ch := command(context.Background(), s.c, "refresh-client")
	s.read()
	s.write("%begin 1 1 1", "%end 1 1 1")
	if r := wait(t, ch); r.err != nil {
		t.Fatalf("command after a long line: %v", r.err)
	}
	notes := s.notifications()
	if len(notes) != 2 || len(notes[0].(Output).Data) != MaxLine-len(prefix) {
		t.Errorf("got %d notifications, want the long output and sessions-changed", len(notes))
	}
}

func TestManyConcurrentCommands(t *testing.T) {
	s := newScript(t)
	const n = 200
	go func() {
		// tmux's side: answer each line with its last argument, unquoted.
		for i := 0; ; i++ {
			line, err := s.lines.ReadString('\n')
			if err != nil {
				return
			}
			f := strings.Fields(line)
			num := strconv.Itoa(i)
			io.WriteString(s.send, "%begin 1 "+num+" 1\n"+strings.Trim(f[len(f)-1], `"`)+"\n%end 1 "+num+" 1\n")
		}
	}()
	results := make([]<-chan result, n)
	for i := range results {
		results[i] = command(context.Background(), s.c, "display", "-p", "v"+strconv.Itoa(i))
	}
	for i, ch := range results {
		want := "v" + strconv.Itoa(i)
		if r := wait(t, ch); r.err != nil || len(r.lines) != 1 || r.lines[0] != want {
			t.Errorf("command %d: got %q, %v; want [%s]", i, r.lines, r.err, want)
		}
	}
}

// A watched client asks a quiet tmux something now and then; while the answers come it lives on,
// and once a question goes unanswered for the timeout it ends with ErrNoAnswer, failing the
// commands that wait.
func TestWatch(t *testing.T) {
	s := newScript(t)
	s.c.Watch(2 * time.Second)
	for i := range 3 {
		if got, want := s.read(), `"display-message" "-p" ""`; got != want {
			t.Fatalf("question %d: the client sent %s, want %s", i, got, want)
		}
		s.write(fmt.Sprintf("%%begin 1 %d 1", i), "", fmt.Sprintf("%%end 1 %d 1", i))
	}
	if err := s.c.Err(); err != nil {
		t.Fatalf("the client ended while tmux answered: %v", err)
	}
	s.read() // the next question, which tmux leaves unanswered
	waiting := command(context.Background(), s.c, "list-windows")
	waitDone(t, s.c)
	if err := s.c.Err(); !errors.Is(err, ErrNoAnswer) {
		t.Fatalf("Err() = %v, want ErrNoAnswer", err)
	}
	if r := wait(t, waiting); !errors.Is(r.err, ErrClosed) || !errors.Is(r.err, ErrNoAnswer) {
		t.Errorf("the waiting command: got %q, %v; want ErrClosed and ErrNoAnswer", r.lines, r.err)
	}
}

// A reply that takes long is no silence as long as others come: what counts is progress.
func TestWatchCountsProgress(t *testing.T) {
	s := newScript(t)
	s.c.Watch(3 * time.Second)
	s.read() // a question
	slow := make([]<-chan result, 5)
	for i := range slow {
		slow[i] = command(context.Background(), s.c, "display", "-p", strconv.Itoa(i))
		s.read()
	}
	// tmux answers one command a second: each reply comes within the timeout of the one before,
	// though the last waits about five seconds in all.
	s.write("%begin 1 0 1", "%end 1 0 1")
	for i := range slow {
		time.Sleep(time.Second)
		s.write(fmt.Sprintf("%%begin 1 %d 1", i+1), strconv.Itoa(i), fmt.Sprintf("%%end 1 %d 1", i+1))
		if r := wait(t, slow[i]); r.err != nil {
			t.Fatalf("command %d: %v", i, r.err)
		}
	}
	if err := s.c.Err(); err != nil {
		t.Errorf("the client ended while replies came: %v", err)
	}
}

// A reply that tmux holds behind pane output (a worker that prints faster than an SSH link
// carries, a long capture over a slow one) is no silence: while lines keep coming, the client
// lives, however long the reply takes within the hard bound.
func TestWatchCountsOutput(t *testing.T) {
	s := newScript(t)
	const timeout = 2 * time.Second
	s.c.Watch(timeout)
	s.read() // a question, which tmux answers only after its output
	slow := command(context.Background(), s.c, "capture-pane", "-p")
	s.read()
	for end := time.Now().Add(3 * timeout); time.Now().Before(end); {
		if _, err := io.WriteString(s.send, "%output %1 more\\015\\012\n"); err != nil {
			waitDone(t, s.c)
			t.Fatalf("the client ended while output came: %v", s.c.Err())
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.write("%begin 1 0 1", "%end 1 0 1", "%begin 1 1 1", "screen", "%end 1 1 1")
	if r := wait(t, slow); r.err != nil || !reflect.DeepEqual(r.lines, []string{"screen"}) {
		t.Fatalf("the command held behind output: got %q, %v; want [screen]", r.lines, r.err)
	}
	if err := s.c.Err(); err != nil {
		t.Errorf("the client ended while output came: %v", err)
	}
}

// A host that streams output and never answers still ends the client: output holds a command
// off for a few timeouts, not for good.
func TestWatchOutputWithoutReply(t *testing.T) {
	s := newScript(t)
	s.c.Watch(time.Second)
	s.read() // a question, never answered
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-s.c.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := io.WriteString(s.send, "%output %1 x\n"); err != nil {
				return
			}
		}
	}()
	select {
	case <-s.c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("a client whose tmux streams output but never answers did not end")
	}
	if err := s.c.Err(); !errors.Is(err, ErrNoAnswer) {
		t.Fatalf("Err() = %v, want ErrNoAnswer", err)
	}
}
