package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/krad-ade/krad/forward/knownhosts"
	"github.com/krad-ade/krad/forward/sshconfig"
	"github.com/krad-ade/krad/remote/shell"
)

// The errors callers branch on besides the types below. Errors from this package wrap them, so
// test with [errors.Is].
var (
	// ErrForwardingForbidden: the host's sshd refused the reverse forward even on a port of its
	// own choosing, so it forbids remote forwarding for this user or key. Retrying cannot fix it.
	ErrForwardingForbidden = errors.New("the host's sshd does not allow remote port forwarding for this user")

	// ErrNotLoopback: the host bound the forward to more than its loopback address, so anyone who
	// can reach the host could reach the bus through it. The forward was closed at once.
	// Retrying cannot fix it.
	ErrNotLoopback = errors.New("the forward on the host is not bound to loopback only")

	// ErrUncheckable: the host did not let the forward be checked (no /proc/net/tcp, or our
	// listener missing from it), so it is not served. Retrying cannot fix it.
	ErrUncheckable = errors.New("cannot check the forward's listening address on the host")

	// ErrKeepalive: the host stopped answering keepalives; the connection was closed whole.
	ErrKeepalive = errors.New("the host stopped answering keepalives")
)

// AuthError is an authentication that could not succeed: the host accepted none of the keys
// offered, or there was no key to offer. Retrying cannot fix it.
type AuthError struct {
	User, Host string
	// Tried lists the keys offered: "agent ED25519 SHA256:…", "/home/me/.ssh/id_ed25519".
	Tried []string
	// Encrypted lists identity files that need a passphrase and that no agent holds. They are
	// never prompted for: add them to the agent with ssh-add.
	Encrypted []string
	// NoAgent says why no agent was asked ("SSH_AUTH_SOCK is not set"), when none was.
	NoAgent string
	// Err is the SSH library's own error, when the host refused.
	Err error
}

func (e *AuthError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "authentication of %s@%s failed: ", e.User, e.Host)
	if len(e.Tried) == 0 {
		b.WriteString("no key to offer")
	} else {
		b.WriteString("the host accepted none of ")
		b.WriteString(strings.Join(e.Tried, ", "))
	}
	if e.NoAgent != "" {
		fmt.Fprintf(&b, " (no agent: %s)", e.NoAgent)
	}
	if len(e.Encrypted) > 0 {
		fmt.Fprintf(&b, "; %s needs a passphrase and no agent holds it: add it with: ssh-add %s",
			strings.Join(e.Encrypted, ", "), strings.Join(e.Encrypted, " "))
	}
	return b.String()
}

func (e *AuthError) Unwrap() error { return e.Err }

// TimeoutError says that a step of a connect did not finish within its deadline: the host
// answered the SSH handshake, but a command there did not end. The usual cause is a shell
// start-up file that waits or loops in non-interactive shells (sshd runs every command through
// the login shell, and bash reads ~/.bashrc for commands from ssh); a host too loaded to run the
// command, or a hung filesystem, do it too. The connection is retried with the usual backoff.
type TimeoutError struct {
	// Host is the host as configured ("buildbox"), for the command a person can try.
	Host string
	// Step is what the host did not finish, as in "the host did not finish installing krad
	// within 30s": "checking the forward", "installing krad", "starting tmux".
	Step  string
	After time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the host did not finish %s within %s: its commands do not end; "+
		"a ~/.bashrc or ~/.profile that waits or loops in non-interactive shells stops every command; this should return at once: ssh %s true",
		e.Step, roundWait(e.After), shell.Quote(e.Host))
}

// Within runs f with a context that ends after d, and returns a *TimeoutError for host and step,
// whatever f made of it, when that deadline ended f: an error that ctx ended, or that f gives
// on its own, is returned as it is.
func Within(ctx context.Context, host, step string, d time.Duration, f func(context.Context) error) error {
	te := &TimeoutError{Host: host, Step: step, After: d}
	fctx, cancel := context.WithTimeoutCause(ctx, d, te)
	defer cancel()
	err := f(fctx)
	if err != nil && ctx.Err() == nil && context.Cause(fctx) == te {
		return te
	}
	return err
}

// WithinReading is [Within] for a command that is sent a file on stdin (f runs it with the reader
// it is given): its deadline counts from the last byte it took, so that a slow link has the time
// it needs and a command that takes nothing (a start-up file that loops) fails after d, as any
// other would. Once stdin is all read, the command has d more to finish.
func WithinReading(ctx context.Context, host, step string, d time.Duration, stdin io.Reader, f func(context.Context, io.Reader) error) error {
	te := &TimeoutError{Host: host, Step: step, After: d}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(d, func() { cancel(te) })
	defer timer.Stop()
	err := f(fctx, progress{stdin, func() { timer.Reset(d) }})
	if err != nil && ctx.Err() == nil && context.Cause(fctx) == te {
		return te
	}
	return err
}

// progress is a reader that calls read after each read that got something.
type progress struct {
	r    io.Reader
	read func()
}

func (p progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.read()
	}
	return n, err
}

// Permanent marks err as one that retrying alone cannot fix: when OnConnect returns it, [Conn.Run]
// does not retry on its backoff but puts the state at [Failed] and waits there until a file the
// attempt read changes or [Conn.Retry] is called, as for a host key. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// isPermanent says whether retrying cannot fix err.
func isPermanent(err error) bool {
	var (
		hk   *knownhosts.HostKeyError
		auth *AuthError
		conf *sshconfig.ConfigError
		perm *permanentError
	)
	return errors.As(err, &hk) || errors.As(err, &auth) || errors.As(err, &conf) || errors.As(err, &perm) ||
		errors.Is(err, ErrForwardingForbidden) || errors.Is(err, ErrNotLoopback) || errors.Is(err, ErrUncheckable)
}
