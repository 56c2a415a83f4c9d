package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/krad-ade/krad/tmux"
)

// A look is how the app tells whether a terminal reacted to a Send: its screen as tmux shows it,
// and which process group is in its foreground. terminal.looked decides; this file asks tmux (and
// this computer's /proc) and applies what it learns.

// lookTimeout bounds one look's tmux commands.
const lookTimeout = 10 * time.Second

// glance reads a pane's screen, where its cursor is, and its foreground process group. Its two
// commands go to tmux together: one round trip, which counts over SSH.
func (e *environment) glance(ctx context.Context, c *tmux.Client, pane tmux.PaneID) (screen, foreground, error) {
	type captured struct {
		rows []string
		err  error
	}
	capture := make(chan captured, 1)
	go func() {
		rows, err := captureRows(ctx, c, pane)
		capture <- captured{rows, err}
	}()
	out, err := c.Command(ctx, "display-message", "-p", "-t", pane.String(), glanceFormat)
	got := <-capture
	if err != nil {
		return screen{}, foreground{}, fmt.Errorf("tmux display-message: %w", err)
	}
	if got.err != nil {
		return screen{}, foreground{}, got.err
	}
	g, err := parseGlance(out)
	if err != nil {
		return screen{}, foreground{}, err
	}
	fg := foreground{name: g.command}
	if e.local() {
		fg.pgid = foregroundGroup(g.pid)
	}
	return screen{rows: got.rows, atBottom: g.y >= g.height-1, home: g.x == 0 && g.y == 0}, fg, nil
}

// local reports whether the environment's tmux runs on this computer, whose processes the app
// can see.
func (e *environment) local() bool {
	_, ok := e.host.(*localHost)
	return ok
}

// foregroundGroup is the foreground process group of the terminal that process pid belongs to
// (tpgid in /proc/PID/stat), or 0 when it cannot be read.
func foregroundGroup(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	return parseTPGID(b)
}

// parseTPGID reads the tpgid of a /proc/PID/stat: 0 when there is none, or it is not a positive
// number.
func parseTPGID(stat []byte) int {
	// The command's name, in parentheses, may hold anything: the fields follow the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	// state ppid pgrp session tty_nr tpgid
	if len(f) < 6 {
		return 0
	}
	n, err := strconv.Atoi(f[5])
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// groupGone reports whether no process of group fg is left, when the app can know.
func groupGone(fg foreground) bool {
	if fg.pgid <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(-fg.pgid, 0), syscall.ESRCH)
}

// look looks at terminal t during its Send s and applies what it sees. It returns once the look
// is applied, or at once when the Send is no longer pending.
func (e *environment) look(ctx context.Context, t *terminal, s *pendingSend) error {
	a := e.app
	a.mu.Lock()
	pending := t.pending(s)
	pane := t.pane
	a.mu.Unlock()
	if !pending {
		return nil
	}
	c, err := e.current()
	if err != nil {
		return err
	}
	began := time.Now()
	sc, fg, err := e.glance(ctx, c, pane)
	if err != nil {
		return err
	}
	// s.fg is set once, before the Send begins: it is read here without the lock.
	job := fg.other(s.fg) && !groupGone(s.fg)
	a.mu.Lock()
	if t.looked(s, sc, job, began, a.cfg.Reaction) {
		a.notifyLocked()
	}
	a.mu.Unlock()
	return nil
}

// lookGap is the least time between two looks that output brings, so that a program that
// redraws without end does not have tmux capture its screen without end.
const lookGap = 50 * time.Millisecond

// lookLocked has the terminal looked at, on a goroutine, while a Send to it waits for its
// reaction: when its output may be one, and when a Send's last key is in. One look at a time;
// output during a look brings another after it. An agent that reports its state reacts by
// reporting: its output brings no look. app.mu must be held.
func (e *environment) lookLocked(t *terminal) {
	s := t.send
	if s == nil || t.dead || t.reported {
		return
	}
	if s.typing || s.looking {
		s.again = true // the Send's own look, once typed, or the next one, sees it
		return
	}
	s.looking = true
	go func() {
		a := e.app
		for {
			a.mu.Lock()
			s.again = false
			a.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), lookTimeout)
			err := e.look(ctx, t, s)
			cancel()
			a.mu.Lock()
			if err != nil || !s.again || !t.pending(s) {
				s.looking = false
				a.mu.Unlock()
				return
			}
			a.mu.Unlock()
			time.Sleep(lookGap)
		}
	}()
}

// beginSend looks at terminal t before a Send types text into it and records the Send, which it
// returns.
func (e *environment) beginSend(ctx context.Context, t *terminal, pane tmux.PaneID, text string) (*pendingSend, error) {
	c, err := e.current()
	if err != nil {
		return nil, err
	}
	sc, fg, err := e.glance(ctx, c, pane)
	if err != nil {
		return nil, err
	}
	a := e.app
	a.mu.Lock()
	defer a.mu.Unlock()
	return t.beginSend(text, sc.rows, fg, time.Now()), nil
}

// rows is a pane's screen, row by row: for the screen a Send's Enter is pressed on.
func (e *environment) rows(ctx context.Context, pane tmux.PaneID) ([]string, error) {
	c, err := e.current()
	if err != nil {
		return nil, err
	}
	return captureRows(ctx, c, pane)
}

// captureRows is the visible screen of a pane, every row of it, as plain text.
func captureRows(ctx context.Context, c *tmux.Client, pane tmux.PaneID) ([]string, error) {
	rows, err := c.Command(ctx, "capture-pane", "-p", "-t", pane.String())
	if err != nil {
		return nil, fmt.Errorf("tmux capture-pane: %w", err)
	}
	return rows, nil
}
