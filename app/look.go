package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/tmux"
)

// A look is how the app sees a terminal: its screen as tmux shows it, and which process group is
// in its foreground. This file asks tmux (and this computer's kernel: foregroundGroup); what a
// look means for a Send is send.go's to decide, and for the quiet spell armQuietLocked's.

// lookTimeout bounds one look's tmux commands.
const lookTimeout = 10 * time.Second

// glance reads a pane's screen, where its cursor is, and its foreground process group. Its two
// commands go to tmux together: one round trip, which counts over SSH.
func (e *environment) glance(ctx context.Context, pane tmux.PaneID) (screen, foreground, error) {
	c, err := e.current()
	if err != nil {
		return screen{}, foreground{}, err
	}
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

// foregroundJob tells whether a job runs in the foreground of a pane's shell: on this computer,
// a process group other than the pane's own process's holds its terminal (the shell put a command
// it runs there, as a shell with job control does); on an SSH host, where the app sees no
// processes, tmux names another command in the pane's foreground than the shell
// krad-ade-agents shell started there (api.PaneShellOption). A pane whose shell the app cannot
// name there (a window opened with a command of a person's own) has no job it can tell of.
func (e *environment) foregroundJob(ctx context.Context, pane tmux.PaneID) (bool, error) {
	c, err := e.current()
	if err != nil {
		return false, err
	}
	type answer struct {
		out []string
		err error
	}
	shell := make(chan answer, 1)
	if !e.local() {
		go func() {
			out, err := c.Command(ctx, "show-options", "-pqv", "-t", pane.String(), api.PaneShellOption)
			shell <- answer{out, err}
		}()
	}
	out, err := c.Command(ctx, "display-message", "-p", "-t", pane.String(), glanceFormat)
	if err != nil {
		return false, fmt.Errorf("tmux display-message: %w", err)
	}
	g, err := parseGlance(out)
	if err != nil {
		return false, err
	}
	if e.local() {
		return localJob(g.pid), nil
	}
	got := <-shell
	if got.err != nil || len(got.out) == 0 {
		return false, got.err
	}
	name := strings.TrimSpace(got.out[0])
	return name != "" && g.command != name, nil
}

// localJob tells whether a job runs in the foreground of the terminal of pane process pid, on
// this computer: a process group holds it other than the pane process's own (tmux starts a pane's
// process as the leader of its session and group), and other than the command of
// krad-ade-agents run, when run is that process (it waits for its command, which takes a group
// of its own when it is a shell with job control).
func localJob(pid int) bool {
	fg := foregroundGroup(pid)
	if fg <= 0 || fg == pid {
		return false
	}
	return !runsCommand(pid, fg)
}

// companionName is the name the kernel gives krad-ade-agents' process (it keeps 15 bytes: all of
// it).
const companionName = "krad-ade-agents"

// local reports whether the environment's tmux runs on this computer, whose processes the app
// can see.
func (e *environment) local() bool {
	_, ok := e.host.(*localHost)
	return ok
}

// parseTPGID reads the tpgid of a /proc/PID/stat: 0 when there is none, or it is not a positive
// number.
func parseTPGID(stat []byte) int { return statField(stat, 5) }

// parsePPID reads the parent's pid of a /proc/PID/stat, as parseTPGID reads the tpgid.
func parsePPID(stat []byte) int { return statField(stat, 1) }

// statField is field i (from 0) after the command's name of a /proc/PID/stat, as a number: 0
// when there is none, or it is not a positive number.
func statField(stat []byte, i int) int {
	// The command's name, in parentheses, may hold anything: the fields follow the last ')'.
	j := bytes.LastIndexByte(stat, ')')
	if j < 0 {
		return 0
	}
	f := strings.Fields(string(stat[j+1:]))
	// state ppid pgrp session tty_nr tpgid
	if len(f) <= i {
		return 0
	}
	n, err := strconv.Atoi(f[i])
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

// captureRows is the visible screen of a pane, every row of it, as plain text.
func captureRows(ctx context.Context, c *tmux.Client, pane tmux.PaneID) ([]string, error) {
	rows, err := c.Command(ctx, "capture-pane", "-p", "-t", pane.String())
	if err != nil {
		return nil, fmt.Errorf("tmux capture-pane: %w", err)
	}
	return rows, nil
}

// foreground says which process group is in a terminal's foreground: its id where the app can see
// the host's processes (this computer), else the name of its leader's command, as tmux tells it.
type foreground struct {
	pgid int
	name string
}

// other reports whether f is another process group than g.
func (f foreground) other(g foreground) bool {
	if f.pgid > 0 && g.pgid > 0 {
		return f.pgid != g.pgid
	}
	return f.name != g.name
}

// screen is what a look saw of a terminal.
type screen struct {
	rows     []string
	atBottom bool // the cursor is on the last row
	home     bool // the cursor is in the top left corner, where a new pane has it
}
