package forward

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/remote/shell"
)

// A connect that fails leaves on the host whatever its sessions started and did not finish: a
// login shell looping in ~/.bashrc, a command of ours that hangs. sshd ends none of it when the
// session or the connection closes, and it signals a session when asked (hostShell.fail asks)
// only where it runs with privilege separation, which it does not for root. So a connect that
// gives up ends them itself, from the host (giveUp), with shell.EndSessions: before its
// connection closes, every other session of that connection, from the connect's sh when it is
// free, else from an exec of its own. A connect's sh that never got past the user's start-up
// files can run nothing, and neither can anything else of a host whose ~/.bashrc loops for every
// shell: its mark is kept (Conn.stuck), and the first later connect whose sh answers ends the
// login shells that hold a mark, which are the given-up ones alone.

// maxStuck is how many marks of connects whose sh never answered are kept; past it the oldest
// goes (and its shell, if it still loops, is the person's to end).
const maxStuck = 64

// newMark is a random word that names one connect's sh on the host.
func newMark() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "krad-ade-connect-" + hex.EncodeToString(b)
}

// giveUp ends what the failed connect that started sh left running on the host, before its
// connection (l) closes; sh is closed after it. What it ended is logged.
func (c *Conn) giveUp(l *link, sh *hostShell) {
	if !sh.answered.Load() {
		// Still in the user's start-up files, or it never started: asked to stop (fail), and
		// its mark kept for a later connect.
		sh.sess.Signal(ssh.SIGKILL)
		if c.stuck = append(c.stuck, sh.mark); len(c.stuck) > maxStuck {
			c.stuck = c.stuck[len(c.stuck)-maxStuck:]
		}
		return
	}
	if l.ctx.Err() != nil {
		return // the connection is gone: nothing of it can run on the host now
	}
	ctx, cancel := context.WithTimeout(l.ctx, c.cfg.CommandTimeout)
	defer cancel()
	command := shell.EndSessions.Command(shell.EndConnection)
	sh.mu.Lock()
	free := sh.broken == nil
	sh.mu.Unlock()
	var (
		out []byte
		err error
	)
	if free {
		out, err = sh.run(ctx, command)
	} else {
		// The sh itself hangs (a command of ours in it): an exec of its own ends its session
		// with the others.
		out, err = execWithin(ctx, l.client, command)
	}
	n, err := shell.EndedSessions(out, err)
	switch {
	case err != nil:
		c.cfg.Logger.Warn("could not end what the failed connect left running on the host", "host", c.cfg.Host, "err", err)
	case n > 0:
		c.cfg.Logger.Info("ended what the failed connect left running on the host", "host", c.cfg.Host, "processes", n)
	}
}

// endStuck ends, through sh (a connect's, which answered), the login shells that earlier connects
// left in the user's start-up files (Conn.stuck), and forgets their marks once the host has
// looked for them.
func (c *Conn) endStuck(ctx context.Context, sh *hostShell) {
	if len(c.stuck) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CommandTimeout)
	defer cancel()
	out, err := sh.run(ctx, shell.EndSessions.Command(append([]string{shell.EndMarked}, c.stuck...)...))
	n, err := shell.EndedSessions(out, err)
	if err != nil {
		c.cfg.Logger.Warn("could not end the shells that earlier connects left in the host's start-up files", "host", c.cfg.Host, "err", err)
		return
	}
	if n > 0 {
		c.cfg.Logger.Info("ended the shells that earlier connects left in the host's start-up files", "host", c.cfg.Host, "connects", len(c.stuck), "processes", n)
	}
	c.stuck = nil
}

// execWithin runs command in a session of its own on client and returns its stdout, within ctx:
// past it the session is signalled and closed.
func execWithin(ctx context.Context, client *ssh.Client, command string) ([]byte, error) {
	s, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("open a session on the host: %w", err)
	}
	defer s.Close()
	var out bytes.Buffer
	stderr := capped.First(1024)
	s.Stdout, s.Stderr = &out, stderr
	done := make(chan error, 1)
	go func() { done <- s.Run(command) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		s.Signal(ssh.SIGKILL)
		s.Close()
		return nil, fmt.Errorf("run on the host: %w", context.Cause(ctx))
	}
	if err != nil {
		return out.Bytes(), fmt.Errorf("run on the host: %w: %s", err, termsafe.QuoteMax(string(bytes.TrimSpace(stderr.Bytes())), 200))
	}
	return out.Bytes(), nil
}
