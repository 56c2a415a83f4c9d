package forward

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/termsafe"
)

// hostShell is a plain sh on the host that runs this package's commands one after the other
// during a connect. sshd runs every command through the user's login shell, which reads its
// start-up files first (bash reads ~/.bashrc for ssh commands); those can take a good part of a
// second, so they are paid once per connection, while the forward is being asked for, and not
// per command.
type hostShell struct {
	sess   *ssh.Session
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *stderrTo // the session's stderr: the shell's, then an exec'd command's ([Shell.Exec])
	// mark is a random word of the shell's command line (exec sh -s MARK), which names it on
	// the host while the login shell that runs that line is still in the user's start-up files
	// (see giveUp).
	mark string
	// answered: a run came back, so the shell got past the user's start-up files.
	answered atomic.Bool

	mu     sync.Mutex
	n      int
	broken error
}

// startShell starts sh on the host and returns at once; the shell's start-up runs on the host
// while the caller goes on.
func startShell(client *ssh.Client) (*hostShell, error) {
	s, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("open a session on the host: %w", err)
	}
	sh := &hostShell{sess: s, stderr: &stderrTo{b: capped.First(4096)}, mark: newMark()}
	s.Stderr = sh.stderr
	if sh.stdin, err = s.StdinPipe(); err != nil {
		s.Close()
		return nil, err
	}
	out, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	sh.stdout = bufio.NewReaderSize(out, 64<<10)
	// exec: the login shell becomes sh, so that sh's parent, $PPID, is the sshd process that
	// serves this connection. The mark is sh's $1, which it does not use.
	if err := s.Start("exec sh -s " + sh.mark); err != nil {
		s.Close()
		return nil, fmt.Errorf("start sh on the host: %w", err)
	}
	return sh, nil
}

// run runs script in the shell and returns what it printed on stdout. Output past maxOutput,
// or ctx ending, breaks the shell: later runs fail. When ctx ends, run returns at once: closing
// the session does not end a read whose command still runs on the host (sshd keeps the channel
// open until it ends), so the read is left to end with the connection.
func (sh *hostShell) run(ctx context.Context, script string) ([]byte, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.broken != nil {
		return nil, sh.broken
	}
	sh.n++
	end := marker + "done-" + strconv.Itoa(sh.n)
	if err := ctx.Err(); err != nil {
		return nil, sh.fail(ctx, err)
	}
	// The script's stderr goes to the session's; the end marker starts a line of its own.
	if _, err := io.WriteString(sh.stdin, "{\n"+script+"\n}\necho\necho "+end+"\n"); err != nil {
		return nil, sh.fail(ctx, fmt.Errorf("write to sh on the host: %w", err))
	}
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := sh.readUntil(end)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, sh.fail(ctx, r.err)
		}
		sh.answered.Store(true)
		return r.out, nil
	case <-ctx.Done():
		return nil, sh.fail(ctx, ctx.Err())
	}
}

// readUntil reads the shell's stdout up to the line end, and returns what came before it.
func (sh *hostShell) readUntil(end string) ([]byte, error) {
	var out bytes.Buffer
	for {
		line, err := sh.stdout.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			err = nil // a long line: keep it whole, in pieces
		}
		if string(bytes.TrimRight(line, "\r\n")) == end {
			return out.Bytes(), nil
		}
		out.Write(line)
		if out.Len() > maxOutput {
			return nil, errors.New("the host printed too much")
		}
		if err != nil {
			if err == io.EOF {
				err = errors.New("sh on the host ended")
			}
			return nil, err
		}
	}
}

// fail marks the shell broken with err, closes it, and returns the error to report: why ctx
// ended when it did (a deadline's *TimeoutError), else err with the shell's stderr.
func (sh *hostShell) fail(ctx context.Context, err error) error {
	// What runs there is given up: sshd, asked, ends the session's process group (not for
	// root, whose sessions it does not signal: see giveUp).
	sh.sess.Signal(ssh.SIGKILL)
	sh.sess.Close()
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	} else if msg := strings.TrimSpace(sh.stderr.buffer().String()); msg != "" {
		err = fmt.Errorf("%w: %s", err, termsafe.Quote(msg))
	}
	sh.broken = err
	return err
}

// stderrTo is a session's stderr, kept in a capped buffer that [Shell.Exec] replaces: what the
// shell printed before the exec is not the command's. The session's stderr is a stream of its
// own, whose bytes may come after the stdout that followed them, so the new buffer starts after
// a marker line that the shell prints on stderr just before the exec.
type stderrTo struct {
	mu      sync.Mutex
	b       *capped.Buffer
	skip    string // the marker line the new buffer waits for, newline included
	pending []byte // what came meanwhile, at most the last len(skip) bytes of it once long
}

func (w *stderrTo) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.skip == "" {
		return w.b.Write(p)
	}
	w.pending = append(w.pending, p...)
	if i := bytes.Index(w.pending, []byte(w.skip)); i >= 0 {
		rest := w.pending[i+len(w.skip):]
		w.skip, w.pending = "", nil
		w.b.Write(rest)
	} else if len(w.pending) > len(w.skip) {
		w.pending = append(w.pending[:0], w.pending[len(w.pending)-len(w.skip):]...)
	}
	return len(p), nil
}

func (w *stderrTo) buffer() *capped.Buffer {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b
}

// fresh starts a new buffer of max bytes, which takes what comes after the line after, and
// returns it.
func (w *stderrTo) fresh(max int, after string) *capped.Buffer {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = capped.First(max)
	w.skip, w.pending = after+"\n", nil
	return w.b
}

// Shell is the plain sh on the host that a connect starts and checks the forward with, lent to
// [Config.OnConnect] for the length of the call. A command run there costs the host no SSH session
// and no login shell of its own, which is what an exec costs: on a host that 100 connections reach
// at once (a laptop's wake), most of a reconnect's work there. sh was started by the user's login
// shell, after its start-up files, so it has the environment an exec's command has.
//
// OnConnect may [Shell.Keep] it, to replace it later with a long-running command ([Shell.Exec]):
// that command then costs no session either.
type Shell struct {
	mu     sync.Mutex
	sh     *hostShell
	ended  bool // OnConnect returned: Run fails
	kept   bool // kept past OnConnect, for Exec
	closed bool // exec'd or closed: Exec fails
}

// Run runs command (one line) in the shell, with stdin from /dev/null, and returns what it
// printed on stdout. Neither its stderr nor its exit status comes back: a command reports through
// what it prints (the frames of package remote/shell), and where the details on stderr are wanted,
// an exec of the same command gives them. Output past 4 MiB, or ctx ending, breaks the shell
// (later runs fail: an exec still works). Run fails once OnConnect has returned.
func (s *Shell) Run(ctx context.Context, command string) ([]byte, error) {
	if s == nil {
		return nil, errors.New("no shell on the host")
	}
	if strings.ContainsAny(command, "\n\r") {
		return nil, errors.New("run in the shell on the host: the command is not one line")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, errors.New("run in the shell on the host: the connect's shell is no longer lent")
	}
	out, err := s.sh.run(ctx, "{ "+command+"\n} </dev/null")
	// run's own newline, which starts its end marker on a line of its own, is not the command's.
	return bytes.TrimSuffix(out, []byte("\n")), err
}

// end takes the shell back: later Runs fail. It says whether OnConnect kept the shell, which
// then is its keeper's to end.
func (s *Shell) end() (kept bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	return s.kept
}

// Keep keeps the shell past OnConnect's return, for one [Shell.Exec]: Run still fails once
// OnConnect has returned, and the connect no longer ends the shell then. A kept shell ends with
// the connection, at Exec's command's end, or at [Shell.Close]. Keep is for OnConnect to call.
func (s *Shell) Keep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.kept = true
	}
}

// Close ends a kept shell that is not to be exec'd; after an Exec it does nothing (the
// command's session is its caller's).
func (s *Shell) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.sh.close()
	}
}

// Exec replaces the shell with command (one line), which sh runs with exec, as the login shell
// runs an SSH exec's command line: from then on the session's stdin, stdout and stderr are the
// command's, and so is its end. It returns the command's stdin and stdout, the session (whose
// Close ends it), and the command's stderr, of which up to 4 KiB is kept (what the shell printed
// before is not in it). The session's stderr is a stream of its own, copied as it comes: the
// buffer holds all the command printed there only once sess.Wait has returned, not when its
// stdout ended.
//
// Nothing reaches the command's stdin until the caller writes: sh reads its own input as it
// comes, so a caller must write nothing before the command has shown that it runs (by printing),
// or sh itself may read it. It is for a command that prints first, like tmux in control mode.
// A command that cannot be run ends the session, with sh's words on the stderr returned.
//
// Exec works once, on a shell kept ([Shell.Keep]) or still lent, whose last Run succeeded.
func (s *Shell) Exec(command string) (stdin io.WriteCloser, stdout io.Reader, sess *ssh.Session, stderr *capped.Buffer, err error) {
	if s == nil {
		return nil, nil, nil, nil, errors.New("no shell on the host")
	}
	if strings.ContainsAny(command, "\n\r") {
		return nil, nil, nil, nil, errors.New("exec in the shell on the host: the command is not one line")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, nil, nil, nil, errors.New("exec in the shell on the host: the connect's shell has ended")
	case s.ended && !s.kept:
		return nil, nil, nil, nil, errors.New("exec in the shell on the host: the connect's shell is no longer lent")
	}
	sh := s.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.broken != nil {
		return nil, nil, nil, nil, sh.broken
	}
	s.closed, s.kept = true, true // the command outlives OnConnect, if it runs within it
	sh.n++
	begin := marker + "exec-" + strconv.Itoa(sh.n)
	stderr = sh.stderr.fresh(4<<10, begin)
	if _, err := io.WriteString(sh.stdin, "echo "+begin+" >&2; exec "+command+"\n"); err != nil {
		sh.sess.Close()
		return nil, nil, nil, nil, fmt.Errorf("write to sh on the host: %w", err)
	}
	return sh.stdin, sh.stdout, sh.sess, stderr, nil
}

// close ends the shell: the end of its input makes sh exit.
func (sh *hostShell) close() {
	sh.stdin.Close()
	sh.sess.Close()
}
