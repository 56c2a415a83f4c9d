package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/termsafe"
)

// Host runs commands on an SSH host. [SSH] is the one over an *ssh.Client; tokenfile.Host has
// the same method, so one value serves both packages.
type Host interface {
	// Run runs command (a command line for the user's login shell) with stdin as its standard
	// input (nil is empty), and returns what it printed on stdout. When the command ran and did
	// not exit 0, err is an *ExitError and stdout is still what it printed. When ctx ends first,
	// Run returns at once with an error that wraps ctx's: the host is asked to kill the command,
	// or to send it [Options.Stop] (OpenSSH's sshd does so only with privilege separation, not
	// for root), and the session is closed, so the command reads end of file and gets a broken
	// pipe when it next writes.
	Run(ctx context.Context, command string, stdin io.Reader) (stdout []byte, err error)
}

// Limits on what a command may print: stdout beyond MaxStdout is an error (our commands print a
// few lines), and stderr is kept up to MaxStderr, for errors.
const (
	MaxStdout = 1 << 20
	MaxStderr = 4 << 10
)

// ErrStdoutTooLong says that a command printed more than [MaxStdout] bytes on stdout. A [Host]
// made with a larger [Options.MaxStdout] returns an error that wraps it: test with errors.Is.
var ErrStdoutTooLong = errors.New("the command printed more than 1 MiB")

// stdoutTooLong is ErrStdoutTooLong for a limit other than MaxStdout.
type stdoutTooLong struct{ max int }

func (e stdoutTooLong) Error() string {
	return fmt.Sprintf("the command printed more than %d bytes", e.max)
}

func (e stdoutTooLong) Is(target error) bool { return target == ErrStdoutTooLong }

// SSH is the [Host] that runs each command in a new session of client.
func SSH(client *ssh.Client) Host { return sshHost{c: client} }

// Options change what a Host made by [SSHWith] allows and does. The zero value is [SSH]'s.
type Options struct {
	// MaxStdout is the most a command may print on stdout: past it the command is cut off and
	// Run fails with an error that wraps ErrStdoutTooLong. 0 is [MaxStdout]. For a command whose
	// answer is large by design (a group's patch); what is kept is held in memory.
	MaxStdout int
	// Stop is the signal the host is asked to send the command's processes when ctx ends first;
	// "" is ssh.SIGKILL. ssh.SIGTERM lets a command that undoes its work on SIGTERM do so.
	Stop ssh.Signal
}

// SSHWith is the [Host] that runs each command in a new session of client, as [SSH] does, with
// opts.
func SSHWith(client *ssh.Client, opts Options) Host { return sshHost{c: client, opts: opts} }

type sshHost struct {
	c    *ssh.Client
	opts Options
}

func (h sshHost) Run(ctx context.Context, command string, stdin io.Reader) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run on the host: %w", err)
	}
	s, err := h.c.NewSession()
	if err != nil {
		return nil, fmt.Errorf("open an ssh session: %w", err)
	}
	defer s.Close()
	max, stop := h.opts.MaxStdout, h.opts.Stop
	if max <= 0 {
		max = MaxStdout
	}
	if stop == "" {
		stop = ssh.SIGKILL
	}
	// A command that prints without end is cut off: the session is closed, as on a cancel.
	stdout := capped.First(max).OnCut(func() { s.Close() })
	stderr := capped.First(MaxStderr)
	s.Stdin, s.Stdout, s.Stderr = stdin, stdout, stderr
	done := make(chan error, 1)
	go func() { done <- s.Run(command) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Ask the host to stop the command, and close our end of the session. The host may
		// keep the session open until the command's last process ends; Run does not wait for
		// that, and the goroutine above ends with the session.
		s.Signal(stop)
		s.Close()
		return stdout.Bytes(), fmt.Errorf("run on the host: %w", context.Cause(ctx))
	}
	out := stdout.Bytes()
	if stdout.Cut() {
		if max != MaxStdout {
			return out, stdoutTooLong{max}
		}
		return out, ErrStdoutTooLong
	}
	var exit *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &exit):
		return out, &ExitError{Status: exit.ExitStatus(), Signal: exit.Signal(), Stderr: stderr.Bytes(), Truncated: stderr.Cut()}
	case errors.As(err, &missing):
		return out, &ExitError{Status: -1, Stderr: stderr.Bytes(), Truncated: stderr.Cut()}
	}
	return out, fmt.Errorf("run on the host: %w", err)
}

// ExitError is a command that ran on the host (or, from [Local], on this computer) and did not
// exit 0.
type ExitError struct {
	Status    int    // the exit status; -1 when there was none (a signal, or a session cut)
	Signal    string // the signal that ended the command, like "KILL", if the host said
	Stderr    []byte // what the command wrote to stderr: the first MaxStderr bytes
	Truncated bool   // whether Stderr is cut short

	local bool // from Local
}

func (e *ExitError) Error() string {
	var b strings.Builder
	where := "on the host"
	if e.local {
		where = "on this computer"
	}
	switch {
	case e.Signal != "":
		fmt.Fprintf(&b, "killed by signal %s %s", termsafe.Escape(e.Signal, 20), where)
	case e.Status < 0:
		fmt.Fprintf(&b, "the command ended without an exit status %s", where)
	default:
		fmt.Fprintf(&b, "exit status %d %s", e.Status, where)
	}
	if msg := strings.TrimSpace(string(e.Stderr)); msg != "" {
		fmt.Fprintf(&b, ": %s", termsafe.Escape(msg, 400))
		if e.Truncated {
			b.WriteString("…")
		}
	}
	return b.String()
}
