package main

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/krad-ade/krad/internal/pty"
)

// onTerminal opens a pseudo-terminal of cols × rows for a child's stdin and stdout: krad-ade then
// shows its UI. What it draws is read and thrown away. close, after the process ended, closes the
// terminal.
func onTerminal(cols, rows int) (tty *os.File, close func(), err error) {
	master, tty, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)}); err != nil {
		master.Close()
		tty.Close()
		return nil, nil, fmt.Errorf("size the pseudo-terminal: %w", err)
	}
	go io.Copy(io.Discard, master) // ends when master is closed
	return tty, func() { tty.Close(); master.Close() }, nil
}

// terminalAttr is childAttr: the app stays in krad-bench's session, with the terminal as its
// stdin and stdout but not as its controlling terminal (the UI needs none). A session of its own
// would put it in another scheduler autogroup (Linux's sched_autogroup, on by default), which
// shares the CPU out per session: that alone cost 25-45% of its Hellos per second against the
// headless app in krad-bench's session, with the UI's own work under 1% of its CPU samples.
func terminalAttr() *syscall.SysProcAttr { return childAttr() }
