package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/tmux"
)

// TmuxDir is the folder of the host's tmux socket, under the home: the app's own, made and
// checked like the other folders under ~/.krad-ade, rather than tmux's default /tmp/tmux-UID,
// which another user of the host can create first and so keep tmux from starting.
const TmuxDir = "~/.krad-ade/tmux"

// spareShell is a connect's sh on the host, kept past the connect ([forward.Shell.Keep]) for
// the first tmux attach of that connection to exec tmux in: a reconnect then costs the host one
// SSH session and one run of the user's start-up files, not two.
type spareShell struct {
	sh     *forward.Shell
	client *ssh.Client // the connection it belongs to
}

// keepShell keeps sh, the connect's on client, as the spare; a spare of an earlier connect that
// no attach took is ended.
func (e *Environment) keepShell(client *ssh.Client, sh *forward.Shell) {
	sh.Keep()
	e.mu.Lock()
	old := e.spare
	e.spare = spareShell{sh: sh, client: client}
	e.mu.Unlock()
	if old.sh != nil {
		old.sh.Close()
	}
}

// takeShell takes the spare when it is client's, and nil otherwise.
func (e *Environment) takeShell(client *ssh.Client) *forward.Shell {
	e.mu.Lock()
	defer e.mu.Unlock()
	sp := e.spare
	if sp.client != client {
		return nil
	}
	e.spare = spareShell{}
	return sp.sh
}

// A tmux server on a host is named by a line of hostScript (hostLook.server): the kernel's boot
// (its boot_id), the host's name, and the inode and path of the socket's folder. Environments
// that are Host aliases of one host, as the same user, share its server.
//
// tmux 3.3a (Debian 12's) crashes (a NULL pointer in the server) when sessions or windows are
// made while other control clients attach: several environments on one server that attach at
// once (the app's start, a laptop's wake) brought it down, and every environment there with it,
// again and again (20 Host aliases of one host took 131 s to come up). starts holds one lock per
// server, taken from the start of a tmux control client to its first reply, so that the
// environments of one server attach one after another, while those of other servers do not wait.
// It narrows the window rather than close it (a window opened by one environment while another
// attaches is not held back): a crash that still happens is healed as any other, by attaching again.
var starts sync.Map // hostLook.server → *sync.Mutex

func startLock(server string) *sync.Mutex {
	mu, _ := starts.LoadOrStore(server, new(sync.Mutex))
	return mu.(*sync.Mutex)
}

// AttachHint is how a person sees the environment's terminals: ssh -t HOST 'tmux -S
// ~/.krad-ade/tmux/krad-ade attach -t NAME', the remote command quoted so that the host's shell
// expands the ~, and HOST quoted for the person's shell when it needs to be (a user name may hold
// quotes or a ';'). session is an environment's name, one plain word. While the app uses an
// earlier version's server, the hint names that one.
func (e *Environment) AttachHint(session string) string {
	e.mu.Lock()
	legacy := e.legacy
	e.mu.Unlock()
	host := shell.Word(e.cfg.Forward.Host)
	if legacy {
		return fmt.Sprintf("ssh -t %s tmux -L %s attach -t %s", host, app.SocketName, session)
	}
	return fmt.Sprintf("ssh -t %s 'tmux -S %s/%s attach -t %s'", host, TmuxDir, app.SocketName, session)
}

// ErrNotConnected is returned by Attach while the host cannot be reached.
var ErrNotConnected = errors.New("the host is not connected")

// Attach waits for the connection, then starts the host's tmux in control mode over SSH (in the
// connect's sh for the connection's first attach, else in a session of its own), attached to
// session (created, with its holder window, if need be), on the socket in ~/.krad-ade/tmux, or
// on an earlier version's server while that one has the session. tmux must answer within the
// Forward's CommandTimeout.
func (e *Environment) Attach(ctx context.Context, session string, onNote func(*tmux.Client, tmux.Notification)) (*tmux.Client, error) {
	e.mu.Lock()
	connected := e.connected
	e.mu.Unlock()
	select {
	case <-connected:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	e.mu.Lock()
	socket, legacy, server := e.socket, e.legacy, e.server
	e.mu.Unlock()
	// The same new-session as on this computer, names escaped for tmux's formats; each argument
	// then quoted for the host's shell.
	opts := tmux.StartOptions{SocketPath: socket, Session: session, WindowName: app.HolderName, Command: app.HolderCommand}
	if legacy {
		// Only ever attached to: the app keeps no server on the old socket, whose folder another
		// user can take (one tmux starts to find no session there exits at once).
		opts = tmux.StartOptions{SocketName: app.SocketName, Session: session, AttachOnly: true}
	}
	args, err := opts.Args()
	if err != nil {
		return nil, err
	}
	cmd := "tmux"
	for _, a := range args {
		cmd += " " + shell.Quote(a)
	}
	client := e.conn.Client()
	if client == nil {
		return nil, ErrNotConnected
	}
	// One attach at a time per tmux server (see starts), up to its first reply.
	start := startLock(server)
	start.Lock()
	stdin, stdout, sess, stderr, err := e.startTmux(client, cmd)
	if err != nil {
		start.Unlock()
		return nil, err
	}
	c, err := e.attach(ctx, stdin, stdout, sess, stderr, onNote)
	start.Unlock()
	if err == nil {
		e.mu.Lock()
		e.attachedOn = client
		e.mu.Unlock()
	}
	var te *forward.TimeoutError
	if errors.As(err, &te) {
		e.endStuckTmux(ctx, client, args)
	}
	if err != nil && legacy && e.legacyGone(ctx, client, session, err) {
		e.mu.Lock()
		e.legacy = false
		e.mu.Unlock()
		e.log.Info("the earlier version's tmux server is gone: the app's own takes its place", "environment", e.cfg.Name, "err", err)
	}
	return c, err
}

// endStuckTmux ends, after an attach whose tmux did not answer in time, what that attach left
// running on the host: the session was signalled as it closed (sessionRW.Close), which sshd does
// not do for root, so the sessions of the connection whose leader runs tmux with args (tmux
// itself, or the login shell still in its start-up files with that command line) are ended from
// the host (shell.EndSessions). Nothing else of the connection's is touched: a group operation
// running meanwhile is another command.
func (e *Environment) endStuckTmux(ctx context.Context, client *ssh.Client, args []string) {
	words := []string{"tmux"}
	for _, a := range args {
		if words = append(words, a); a == "-C" {
			break
		}
	}
	cmd := shell.EndSessions.Command(shell.EndConnection, shell.Pattern(words...))
	out, err := timed{remote.SSH(client), e, "ending the tmux that did not answer"}.Run(context.WithoutCancel(ctx), cmd, nil)
	n, err := shell.EndedSessions(out, err)
	switch {
	case err != nil:
		e.log.Warn("could not end the tmux that did not answer on the host", "environment", e.cfg.Name, "err", err)
	case n > 0:
		e.log.Info("ended the tmux that did not answer on the host", "environment", e.cfg.Name, "processes", n)
	}
}

// legacyGone says, after an attach to the earlier version's server failed with attachErr, whether
// that server is known not to hold session any more: tmux there says so (has-session exits 1, for
// no server or no such session). The failed attach alone is no evidence: a stuck server times out,
// the connection may have dropped, the app may be stopping; taking any of those for the server's
// end would start a second server on the new socket and leave the old one's agents for good.
func (e *Environment) legacyGone(ctx context.Context, client *ssh.Client, session string, attachErr error) bool {
	var te *forward.TimeoutError
	if ctx.Err() != nil || errors.As(attachErr, &te) {
		return false
	}
	cmd := "tmux -L " + shell.Quote(app.SocketName) + " has-session -t " + shell.Quote("="+session)
	_, err := timed{remote.SSH(client), e, "looking for the earlier version's tmux server"}.Run(ctx, cmd, nil)
	var exit *remote.ExitError
	return errors.As(err, &exit) && exit.Status == 1
}

// startTmux starts cmd, a tmux control client's command line, on client: in the connect's kept
// sh when this is the connection's first attach (no SSH session and no login shell of its own),
// else as an SSH exec of its own, as the login shell runs it. tmux prints before it reads (the
// reply to its command line's command), as the kept sh needs ([forward.Shell.Exec]).
func (e *Environment) startTmux(client *ssh.Client, cmd string) (io.WriteCloser, io.Reader, *ssh.Session, *capped.Buffer, error) {
	if sh := e.takeShell(client); sh != nil {
		stdin, stdout, sess, stderr, err := sh.Exec(cmd)
		if err == nil {
			return stdin, stdout, sess, stderr, nil
		}
		e.log.Debug("tmux could not start in the connect's shell: in a session of its own", "environment", e.cfg.Name, "error", err)
	}
	sess, err := client.NewSession()
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("open an SSH session for tmux: %w", err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, nil, nil, nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, nil, nil, nil, err
	}
	stderr := capped.First(4 << 10)
	sess.Stderr = stderr
	if err := sess.Start("exec " + cmd); err != nil {
		sess.Close()
		return nil, nil, nil, nil, fmt.Errorf("start tmux on the host: %w", err)
	}
	return stdin, stdout, sess, stderr, nil
}

// attach waits for the first reply of the tmux control client started on sess (tmux.Attach),
// within the Forward's CommandTimeout.
func (e *Environment) attach(ctx context.Context, stdin io.WriteCloser, stdout io.Reader, sess *ssh.Session, stderr *capped.Buffer, onNote func(*tmux.Client, tmux.Notification)) (*tmux.Client, error) {
	d := e.cfg.Forward.CommandTimeout
	tctx, cancel := context.WithTimeoutCause(ctx, d, &forward.TimeoutError{Host: e.cfg.Forward.Host, Step: "starting tmux", After: d})
	defer cancel()
	c, err := tmux.Attach(tctx, newSessionRW(stdout, stdin, sess), onNote)
	var ce *tmux.CommandError
	switch {
	case err == nil:
		return c, nil
	case errors.As(err, &ce):
		// The host's own words, quoted and cut as the tmux package quotes a failed command.
		return nil, fmt.Errorf("tmux on the host: %w", err)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case tctx.Err() != nil:
		return nil, context.Cause(tctx) // the step's *forward.TimeoutError, bare
	default:
		settled(sess, time.Second)
		return nil, fmt.Errorf("tmux on the host ended at once: %v: %s", err, termsafe.QuoteMax(strings.TrimSpace(stderr.String()), tmux.MaxErrorText))
	}
}

// sessionRW is an SSH session's stdin and stdout as one stream for the tmux client. Its Close
// ends a Read at once, as the client needs: closing the session alone does not while tmux runs
// on the host (sshd keeps the channel open until the command ends, and a tmux client whose
// server is stopped does not end), so stdout is read through a pipe that Close closes, and the
// copy into it ends with the session or the connection.
type sessionRW struct {
	r *io.PipeReader
	s *ssh.Session

	// wmu is held by Write, and by Close while it ends stdin: the SSH library's channel must
	// not be written and half-closed at once. Close does not wait for a Write (one stalled on
	// a full window would hold it): the session's close ends stdin on the host all the same.
	wmu sync.Mutex
	w   io.WriteCloser
}

// settled waits up to d for sess to end: its stderr is a stream of its own, copied as it comes,
// and whole only then, not when its stdout ended. A session still open after d is left as it is.
func settled(sess *ssh.Session, d time.Duration) {
	done := make(chan struct{})
	go func() {
		sess.Wait() // returns when the session's channel closes, at the latest as it is closed
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

func newSessionRW(stdout io.Reader, stdin io.WriteCloser, sess *ssh.Session) *sessionRW {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, stdout)
		pw.CloseWithError(err)
	}()
	return &sessionRW{r: pr, w: stdin, s: sess}
}

func (s *sessionRW) Read(p []byte) (int, error) { return s.r.Read(p) }

func (s *sessionRW) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.w.Write(p)
}

func (s *sessionRW) Close() error {
	if s.wmu.TryLock() {
		s.w.Close()
		s.wmu.Unlock()
	}
	s.r.Close()
	// tmux ends when its input does, unless it hangs: sshd, asked, ends the session's process
	// group (not for root: see Environment.endStuckTmux).
	s.s.Signal(ssh.SIGKILL)
	return s.s.Close()
}

// Stalled says why the host's tmux stopped answering, or its stream ended (err): the SSH link, or
// tmux itself. For a silence, it asks the connection to prove itself (forward.Conn.Check: a
// keepalive within CheckTimeout) and waits for the outcome. A link that does not answer is ended
// and made again by the connection: the error says so, so that a person is not sent to look at a
// tmux that was never the cause.
func (e *Environment) Stalled(ctx context.Context, err error) error {
	e.mu.Lock()
	client := e.attachedOn
	e.mu.Unlock()
	if client == nil || e.conn.Client() != client {
		return e.linkLost(err)
	}
	if !errors.Is(err, tmux.ErrNoAnswer) {
		return e.ended(ctx, client, err)
	}
	e.conn.Check("tmux stopped answering")
	// The check takes CheckTimeout, more on a link whose round trips are slow; bytes that come
	// meanwhile extend it. A link not dropped within stalledWait is said to have held, no more.
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	deadline := time.After(stalledWait)
	for {
		select {
		case <-ctx.Done():
			return err
		case <-deadline:
			return fmt.Errorf("tmux on %s is not answering, though the SSH link to it held (a keepalive check did not drop it within %s); the app attaches again: %w", e.cfg.Forward.Host, stalledWait, err)
		case <-t.C:
			if e.conn.Client() != client {
				e.log.Info("tmux stopped answering because the SSH link did: the connection is made again", "environment", e.cfg.Name, "host", e.cfg.Forward.Host)
				return fmt.Errorf("the SSH link to %s is not answering (a keepalive had no reply within %s); the app is connecting again: %w", e.cfg.Forward.Host, forward.CheckTimeout, err)
			}
		}
	}
}

// ended says why the host's tmux stream ended without tmux's %exit (err): when the SSH connection
// ended with it (its keepalives went unanswered, say), that is the cause, and the error says so;
// else err, tmux's own end. The connection notes its loss a moment after its channels end, so it
// is looked at for up to endedWait.
func (e *Environment) ended(ctx context.Context, client *ssh.Client, err error) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	deadline := time.After(endedWait)
	for {
		if e.conn.Client() != client {
			return e.linkLost(err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-deadline:
			return err
		case <-t.C:
		}
	}
}

// endedWait is how long ended looks for the connection's loss.
const endedWait = time.Second

// linkLost is err, the end of the host's tmux, explained by the loss of the SSH connection: the
// link did not answer its keepalives, or it ended otherwise (what the connection says of it).
func (e *Environment) linkLost(err error) error {
	host := e.cfg.Forward.Host
	switch why := e.conn.Lost(); {
	case errors.Is(why, forward.ErrKeepalive):
		return fmt.Errorf("the SSH link to %s is not answering (%v); the app is connecting again: %w", host, why, err)
	case why != nil:
		return fmt.Errorf("the SSH connection to %s was lost (%v); the app is connecting again: %w", host, why, err)
	}
	return fmt.Errorf("the SSH connection to %s was lost; the app is connecting again: %w", host, err)
}

// stalledWait is how long Stalled waits for the connection's check.
const stalledWait = 2*forward.CheckTimeout + time.Second
