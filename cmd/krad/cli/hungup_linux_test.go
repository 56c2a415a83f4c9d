package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krad-ade/krad/internal/pty"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// openPTY opens a pseudo-terminal, as tmux opens one for a window: its master, and its
// terminal (the slave) as the window's process gets it.
func openPTY(t *testing.T) (master, term *os.File) {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// TestRunOnAHungUpTerminal: krad-ade-agents run (the real program, as a window runs it) whose
// terminal hung up before it started, as a window closed right after it opened leaves it,
// starts nothing and exits as a hangup would (129), with and without --exec; on a live terminal
// the same command runs. The kernel sends no hangup to a process that starts on a terminal
// already hung up, so a command started there would run on with no window: the leak
// app TestSpawnCloseLoop found (a worker's sleep left after its Close).
func TestRunOnAHungUpTerminal(t *testing.T) {
	bin := testbin.Dir(t)
	for _, tt := range []struct {
		name   string
		hungUp bool
		args   []string
	}{
		{"hung up, --exec", true, []string{"run", "--exec", "--"}},
		{"hung up", true, []string{"run", "--"}},
		{"live, --exec", false, []string{"run", "--exec", "--"}},
		{"live", false, []string{"run", "--"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			master, term := openPTY(t)
			if tt.hungUp {
				master.Close() // what tmux's kill-window does to the window's terminal
				if !terminalHungUp(term) {
					t.Fatal("terminalHungUp says no for a terminal whose master is closed")
				}
			} else if terminalHungUp(term) {
				t.Fatal("terminalHungUp says yes for a live terminal")
			}
			ran := filepath.Join(t.TempDir(), "ran")
			cmd := exec.Command(filepath.Join(bin, "krad-ade-agents"), append(tt.args, "touch", ran)...)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
			var errOut bytes.Buffer
			cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, &errOut
			err := cmd.Run()
			_, statErr := os.Stat(ran)
			if !tt.hungUp {
				if err != nil || statErr != nil {
					t.Errorf("on a live terminal: %v (%s), the command ran: %v", err, errOut.String(), statErr == nil)
				}
				return
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 129 {
				t.Errorf("got %v, want exit code 129 (stderr %q)", err, errOut.String())
			}
			if statErr == nil {
				t.Error("the command ran on a terminal that had hung up")
			}
			if !strings.Contains(errOut.String(), "not started: the terminal hung up first") {
				t.Errorf("stderr %q does not say why", errOut.String())
			}
		})
	}
}

// TestTerminalHungUpOnOthers: a pipe, /dev/null and a regular file are no terminals that hung up.
func TestTerminalHungUpOnOthers(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, f := range []*os.File{r, null, file} {
		if terminalHungUp(f) {
			t.Errorf("%s: terminalHungUp says yes", f.Name())
		}
	}
}
