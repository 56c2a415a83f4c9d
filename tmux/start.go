package tmux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/krad-ade/krad/internal/capped"
)

// StartOptions says which tmux to run, on which server, attached to which session.
type StartOptions struct {
	// Program is the tmux executable, a path or a name looked up in PATH. Empty means "tmux".
	Program string

	// SocketName picks the server by socket name, as tmux -L does; the app uses "krad-ade".
	// SocketPath picks it by the socket's path, as tmux -S does; tests use one in t.TempDir().
	// Exactly one must be set: Start never touches the user's default server.
	SocketName string
	SocketPath string

	// ConfigFile is the file a server started by this call reads (tmux -f). Empty means tmux's
	// own default (~/.tmux.conf and the like); "/dev/null" means none. A server that is running
	// already keeps the configuration it has.
	ConfigFile string

	// Session is the session to attach to, created when it does not exist. tmux would turn ':'
	// and '.' into '_', so Start refuses them, and a name that is empty or holds control
	// characters.
	Session string

	// Width and Height are the size of a session this call creates; zero means 200 and 50.
	Width, Height int

	// WindowName and Command are the name and the command of the first window of a session this
	// call creates (tmux new-session -n NAME -- COMMAND…); empty means tmux's defaults. They are
	// ignored when the session exists. WindowName is text: Start escapes it, as it does Session,
	// for tmux's formats. Command is run as it is when it has several elements, through the
	// shell when it has one.
	WindowName string
	Command    []string

	// AttachOnly attaches to Session and never creates it (tmux attach-session): when there is
	// no such session, tmux refuses, and Start says so. (With no server running, tmux starts one
	// to learn that, which exits at once, having no session.) Width, Height, WindowName and
	// Command are then not used.
	AttachOnly bool

	// Env is the environment of the tmux client, and of the server when this call starts it,
	// whose windows inherit it. Nil means this process's environment.
	Env []string

	// OnNotification is called for every notification, with the client, as New's onNote is.
	OnNotification func(*Client, Notification)
}

// closeGrace is how long Close waits for tmux to exit once its input is closed, before it kills it.
const closeGrace = 5 * time.Second

// maxStderr is how much of tmux's standard error Start keeps for its error messages.
const maxStderr = 4 << 10

// Start runs `tmux -u {-L NAME | -S PATH} [-f FILE] -C new-session -A -s SESSION -x W -y H`, which
// starts the server if it is not running and attaches to SESSION, creating it if need be
// (AttachOnly runs `-C attach-session -t =SESSION` instead). It returns a Client over the
// process's standard input and output once tmux has answered that command ([Attach]), so that the
// session exists when Start returns. ctx bounds the start only; the client lives until it is
// closed or tmux exits.
//
// -u makes tmux send text as UTF-8 whatever the locale; without it a control client in a non-UTF-8
// locale gets "_" for every non-ASCII character of a reply.
//
// If tmux fails to start, attach, or create the session, the error says why and holds the end of
// what tmux wrote on its standard error. Closing the client closes tmux's input, which makes it
// detach and exit; Close waits for that (and kills it if it takes more than a few seconds). The
// server and its session keep running: kill them with kill-server or kill-session.
func Start(ctx context.Context, opts StartOptions) (*Client, error) {
	args, err := opts.Args()
	if err != nil {
		return nil, fmt.Errorf("start tmux: %w", err)
	}
	program := opts.Program
	if program == "" {
		program = "tmux"
	}

	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start tmux: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("start tmux: %w", err)
	}
	p := &process{stdin: inW, stdout: outR, stderr: capped.Last(maxStderr), exited: make(chan struct{})}
	p.cmd = exec.Command(program, args...)
	p.cmd.Env = opts.Env
	// Pipes of our own rather than StdoutPipe: Wait closes those as soon as the process exits,
	// which would lose the last lines (%exit among them) before the client read them.
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, p.stderr
	p.cmd.WaitDelay = time.Second
	err = p.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start tmux: %w", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()

	c, err := Attach(ctx, p, opts.OnNotification)
	var ce *CommandError
	switch {
	case err == nil:
		return c, nil
	case ctx.Err() != nil && err == context.Cause(ctx):
		return nil, fmt.Errorf("start tmux: %w", err)
	case errors.As(err, &ce):
		return nil, p.startError(fmt.Errorf("%s: %w", opts.command(), err))
	default:
		return nil, p.startError(err)
	}
}

// Attach makes a Client over rw, which carries a tmux just started in control mode with the
// command line of [StartOptions.Args] (through an SSH session, say), and returns it once tmux has
// answered that command line's new-session or attach-session: the first reply on the stream,
// which is not the client's (tmux marks it flags 0; it reaches onNote too, as an
// [UnsolicitedReply]). onNote is as [New]'s: it is given the client, from the first
// notification on.
//
// When tmux does not answer so, Attach closes the client and returns
//
//   - a [*CommandError] with tmux's own lines when tmux refused the command (it could not create
//     the session, or attach-session found none);
//   - the reason the client ended, [Client.Err], when it ended first (tmux exited, the stream
//     ended): what tmux wrote elsewhere, its standard error, is for the caller to add;
//   - context.Cause(ctx) when ctx ended first: ctx bounds the wait, and a caller that wants an
//     error of its own for a deadline gives it as the cause (context.WithTimeoutCause).
func Attach(ctx context.Context, rw io.ReadWriteCloser, onNote func(*Client, Notification)) (*Client, error) {
	// The reply to the command line's command is the first reply on the stream, and not ours:
	// tmux ran it from the command line.
	first := make(chan UnsolicitedReply, 1)
	seen := false // notifications come one at a time, from the reading goroutine
	c := New(rw, func(c *Client, n Notification) {
		// onNote first: the caller has seen tmux's answer by the time Attach returns it.
		if onNote != nil {
			onNote(c, n)
		}
		if r, ok := n.(UnsolicitedReply); ok && !seen {
			seen = true
			first <- r
		}
	})
	answered := func(r UnsolicitedReply) (*Client, error) {
		if r.Failed {
			c.Close()
			return nil, &CommandError{Lines: r.Lines}
		}
		return c, nil
	}
	select {
	case r := <-first:
		return answered(r)
	case <-c.Done():
		// Every notification has been handed on by the time the client is done: a tmux that
		// refused the command and exited says why in its reply, which is worth more than the end.
		select {
		case r := <-first:
			return answered(r)
		default:
		}
		return nil, c.Err()
	case <-ctx.Done():
		c.Close()
		return nil, context.Cause(ctx)
	}
}

// Args is the command line of the tmux that Start runs, without the program's name: the flags
// that pick the server, -C, and the command that attaches (new-session -A, or attach-session for
// AttachOnly). It is what runs tmux on another host through a shell, each argument quoted for
// that shell, before [Attach] takes its stream.
func (o StartOptions) Args() ([]string, error) {
	args := []string{"-u"}
	switch {
	case o.SocketName != "" && o.SocketPath != "":
		return nil, errors.New("set SocketName or SocketPath, not both")
	case o.SocketName != "":
		args = append(args, "-L", o.SocketName)
	case o.SocketPath != "":
		args = append(args, "-S", o.SocketPath)
	default:
		return nil, errors.New("set SocketName or SocketPath: Start does not use the default server")
	}
	if o.ConfigFile != "" {
		args = append(args, "-f", o.ConfigFile)
	}
	args = append(args, "-C")
	if o.AttachOnly {
		if err := checkSession(o.Session); err != nil {
			return nil, err
		}
		// = makes the target the session of exactly that name, not one it is a prefix of.
		return append(args, "attach-session", "-t", argvArg("="+o.Session)), nil
	}
	na, err := newSessionArgs(o.Session, o.Width, o.Height, o.WindowName, o.Command)
	if err != nil {
		return nil, err
	}
	return append(args, na...), nil
}

// command is the name of the command that Args's command line runs, for errors.
func (o StartOptions) command() string {
	if o.AttachOnly {
		return "attach-session"
	}
	return "new-session"
}

// checkSession refuses a session name that is empty or holds ':', '.' (tmux would turn them into
// '_', and the name would not find the session) or control characters.
func checkSession(session string) error {
	if session == "" || strings.ContainsAny(session, ":.") ||
		strings.ContainsFunc(session, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("session name %q: it must not be empty, or hold ':', '.' or control characters", session)
	}
	return nil
}

// newSessionArgs is the command line, from "new-session" on, that attaches to session, creating
// it if need be, width×height (zero means 200×50), its first window named windowName and running
// command (both empty for tmux's defaults). The session and window names arrive as text, escaped
// for tmux's formats and its command line.
func newSessionArgs(session string, width, height int, windowName string, command []string) ([]string, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	w, h := width, height
	if w == 0 {
		w = 200
	}
	if h == 0 {
		h = 50
	}
	if w < 1 || h < 1 {
		return nil, fmt.Errorf("size %dx%d", w, h)
	}
	args := []string{"new-session", "-A", "-s", argvArg(FormatLiteral(session)), "-x", strconv.Itoa(w), "-y", strconv.Itoa(h)}
	if windowName != "" {
		args = append(args, "-n", argvArg(FormatLiteral(windowName)))
	}
	if len(command) > 0 {
		args = append(args, "--")
		for _, a := range command {
			args = append(args, argvArg(a))
		}
	}
	return args, nil
}

// argvArg returns s as an argument of the command on tmux's command line, where an argument that
// ends in ';' ends the command (and loses the ';') unless a backslash comes before the ';'.
func argvArg(s string) string {
	if strings.HasSuffix(s, ";") {
		return s[:len(s)-1] + `\;`
	}
	return s
}

// process is a running `tmux -C` as a stream: its standard output to read, its input to write.
type process struct {
	cmd     *exec.Cmd
	stdin   *os.File
	stdout  *os.File
	stderr  *capped.Buffer // the end of what tmux wrote, for errors
	exited  chan struct{}
	waitErr error // set before exited is closed
}

func (p *process) Read(b []byte) (int, error)  { return p.stdout.Read(b) }
func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// kill ends the tmux process at once, for a client that no longer answers; Close still reaps it.
func (p *process) kill() { p.cmd.Process.Kill() }

// Close closes tmux's input, which makes it exit, waits for it (killing it after closeGrace), and
// closes its output.
func (p *process) Close() error {
	p.stdin.Close()
	var err error
	select {
	case <-p.exited:
	case <-time.After(closeGrace):
		err = fmt.Errorf("tmux did not exit within %v of its input closing; killed it", closeGrace)
		p.cmd.Process.Kill()
		<-p.exited
	}
	p.stdout.Close()
	return err
}

// startError says why Start failed: cause, tmux's exit status when it has exited, and what it
// wrote to standard error.
func (p *process) startError(cause error) error {
	select {
	case <-p.exited:
	case <-time.After(closeGrace):
	}
	msg := "start tmux"
	select {
	case <-p.exited:
		var exit *exec.ExitError
		if errors.As(p.waitErr, &exit) {
			msg += " (" + exit.ProcessState.String() + ")"
		}
	default:
	}
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		msg += ", stderr " + strconv.Quote(s)
	}
	return fmt.Errorf("%s: %w", msg, cause)
}
