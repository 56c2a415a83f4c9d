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
	// Run returns at once with an error that wraps ctx's: the host is asked to kill the command
	// (OpenSSH's sshd does so only with privilege separation, not for root), and the session is
	// closed, so the command reads end of file and gets a broken pipe when it next writes.
	Run(ctx context.Context, command string, stdin io.Reader) (stdout []byte, err error)
}

// Limits on what a command may print: stdout beyond MaxStdout is an error (our commands print a
// few lines), and stderr is kept up to MaxStderr, for errors.
const (
	MaxStdout = 1 << 20
	MaxStderr = 4 << 10
)

// ErrStdoutTooLong says that a command printed more than [MaxStdout] bytes on stdout.
var ErrStdoutTooLong = errors.New("the command printed more than 1 MiB")

// SSH is the [Host] that runs each command in a new session of client.
func SSH(client *ssh.Client) Host { return sshHost{client} }

type sshHost struct{ c *ssh.Client }

func (h sshHost) Run(ctx context.Context, command string, stdin io.Reader) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run on the host: %w", err)
	}
	s, err := h.c.NewSession()
	if err != nil {
		return nil, fmt.Errorf("open an ssh session: %w", err)
	}
	defer s.Close()
	// A command that prints without end is cut off: the session is closed, as on a cancel.
	stdout := capped.First(MaxStdout).OnCut(func() { s.Close() })
	stderr := capped.First(MaxStderr)
	s.Stdin, s.Stdout, s.Stderr = stdin, stdout, stderr
	done := make(chan error, 1)
	go func() { done <- s.Run(command) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Ask the host to kill the command, and close our end of the session. The host may
		// keep the session open until the command's last process ends; Run does not wait for
		// that, and the goroutine above ends with the session.
		s.Signal(ssh.SIGKILL)
		s.Close()
		return stdout.Bytes(), fmt.Errorf("run on the host: %w", context.Cause(ctx))
	}
	out := stdout.Bytes()
	if stdout.Cut() {
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
