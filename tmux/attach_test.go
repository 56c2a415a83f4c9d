package tmux

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// cmdStream is a tmux process's standard input and output as one stream, through os/exec's own
// pipes: a stream that Start did not make, as the bridge's SSH session is not.
type cmdStream struct {
	io.ReadCloser
	in  io.WriteCloser
	cmd *exec.Cmd
}

func (s *cmdStream) Write(p []byte) (int, error) { return s.in.Write(p) }

func (s *cmdStream) Close() error {
	s.in.Close()
	s.ReadCloser.Close()
	return s.cmd.Wait()
}

// runTmux runs tmux with the command line of opts.Args, as the bridge runs it on a host.
func runTmux(t *testing.T, program string, opts StartOptions) *cmdStream {
	t.Helper()
	args, err := opts.Args()
	if err != nil {
		t.Fatalf("Args: %v", err)
	}
	cmd := exec.Command(program, args...)
	cmd.Env = testEnv()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &cmdStream{ReadCloser: out, in: in, cmd: cmd}
}

// Attach over a stream of the caller's: it returns once tmux has answered the command line of
// StartOptions.Args, and onNote is given the client from the first notification on, tmux's
// answer included, which comes before Attach returns. A refused command gives tmux's own words,
// a tmux that ends gives why, and a stream that says nothing gives the cause of ctx's end; in
// each case the stream is closed.
func TestAttach(t *testing.T) {
	program := tmuxPath(t)
	dir := socketDir(t)
	socket := filepath.Join(dir, "s")
	t.Cleanup(func() { exec.Command(program, "-S", socket, "kill-server").Run() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var mu sync.Mutex
	var given []*Client
	var notes []Notification
	c, err := Attach(ctx, runTmux(t, program, StartOptions{SocketPath: socket, ConfigFile: "/dev/null", Session: "s", WindowName: "first"}),
		func(c *Client, n Notification) {
			mu.Lock()
			defer mu.Unlock()
			given = append(given, c)
			notes = append(notes, n)
		})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	defer c.Close()
	mu.Lock()
	if len(notes) == 0 || !reflect.DeepEqual(notes[0], UnsolicitedReply{}) {
		t.Errorf("the notifications before Attach returned are %v, want tmux's answer first", notes)
	}
	for i, g := range given {
		if g != c {
			t.Errorf("notification %d (%T) was given client %p, want the one Attach returned, %p", i, notes[i], g, c)
		}
	}
	mu.Unlock()
	if got, err := c.Command(ctx, "display-message", "-p", "#{session_name} #{window_name}"); err != nil || !reflect.DeepEqual(got, []string{"s first"}) {
		t.Errorf("display-message: got %q, %v; want the session new-session made", got, err)
	}

	// AttachOnly attaches to the session there is, and creates none.
	second, err := Attach(ctx, runTmux(t, program, StartOptions{SocketPath: socket, Session: "s", AttachOnly: true}), nil)
	if err != nil {
		t.Fatalf("Attach, AttachOnly: %v", err)
	}
	if got, err := second.Command(ctx, "list-sessions", "-F", "#{session_name}"); err != nil || !reflect.DeepEqual(got, []string{"s"}) {
		t.Errorf("list-sessions: got %q, %v; want the one session", got, err)
	}
	second.Close()

	// tmux refuses and exits: its reply says why, not the %exit that follows it.
	_, err = Attach(ctx, runTmux(t, program, StartOptions{SocketPath: socket, Session: "nope", AttachOnly: true}), nil)
	var ce *CommandError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "can't find session") {
		t.Errorf("AttachOnly to no such session: got %v, want tmux's failed reply", err)
	}
	if got, err := c.Command(ctx, "list-sessions", "-F", "#{session_name}"); err != nil || !reflect.DeepEqual(got, []string{"s"}) {
		t.Errorf("list-sessions after the refused attach: got %q, %v; want the one session", got, err)
	}

	// tmux ends without an answer: why it ended.
	_, err = Attach(ctx, runTmux(t, program, StartOptions{SocketPath: filepath.Join(dir, "missing", "s"), ConfigFile: "/dev/null", Session: "x"}), nil)
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Reason != "server exited unexpectedly" {
		t.Errorf("a server that cannot start: got %v, want tmux's %%exit", err)
	}

	// A stream that says nothing: ctx's cause, and the stream closed.
	r, w := io.Pipe()
	silent := struct {
		io.Reader
		io.Writer
		io.Closer
	}{r, io.Discard, r}
	mine := errors.New("tmux did not answer in time")
	sctx, scancel := context.WithTimeoutCause(ctx, 100*time.Millisecond, mine)
	defer scancel()
	if _, err := Attach(sctx, silent, nil); err != mine {
		t.Errorf("a silent stream: got %v, want ctx's cause", err)
	}
	if _, err := w.Write([]byte("%exit\n")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("writing to the silent stream's other end after Attach: %v, want it closed", err)
	}
}

// StartOptions.Args is the command line the bridge runs on a host: the server by socket, -C,
// and new-session, or attach-session to exactly the session for AttachOnly.
func TestStartOptionsArgs(t *testing.T) {
	for _, tt := range []struct {
		opts StartOptions
		want []string
	}{
		{StartOptions{SocketPath: "/h/.krad-ade/tmux/krad-ade", Session: "build", WindowName: "krad-ade-starting", Command: []string{"sleep", "2147483647"}},
			[]string{"-u", "-S", "/h/.krad-ade/tmux/krad-ade", "-C", "new-session", "-A", "-s", "build", "-x", "200", "-y", "50", "-n", "krad-ade-starting", "--", "sleep", "2147483647"}},
		{StartOptions{SocketName: "krad-ade", ConfigFile: "/dev/null", Session: "build", AttachOnly: true, Width: 10, WindowName: "w"},
			[]string{"-u", "-L", "krad-ade", "-f", "/dev/null", "-C", "attach-session", "-t", "=build"}},
		{StartOptions{SocketName: "krad-ade", Session: "a;", AttachOnly: true},
			[]string{"-u", "-L", "krad-ade", "-C", "attach-session", "-t", `=a\;`}},
	} {
		got, err := tt.opts.Args()
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%+v: got %q, %v; want %q", tt.opts, got, err, tt.want)
		}
	}
	for _, opts := range []StartOptions{
		{Session: "x"},
		{SocketName: "a", SocketPath: "/b", Session: "x"},
		{SocketName: "a", Session: "a:b"},
		{SocketName: "a", Session: "a.b", AttachOnly: true},
		{SocketName: "a", Session: "", AttachOnly: true},
		{SocketName: "a", Session: "a\nb", AttachOnly: true},
	} {
		if got, err := opts.Args(); err == nil {
			t.Errorf("%+v: got %q, want an error", opts, got)
		}
	}
}
