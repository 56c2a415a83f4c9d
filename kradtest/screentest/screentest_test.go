package screentest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStopAtCleanup: the program runs in the folder In names, and at the test's end a program
// still running is sent SIGTERM and waited for: what it does as it stops is done when the test's
// cleanups are (without the option, killing the server would hang it up before it wrote).
func TestStopAtCleanup(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	prog := filepath.Join(dir, "stopper")
	script := "#!/bin/sh\n" +
		"pwd > \"$1/pwd\"\n" +
		"trap 'sleep 1; echo stopped > \"$1/stopped\"; exit 0' TERM\n" +
		"stty -icanon -echo\n" +
		"echo ready\n" +
		"while :; do sleep 0.1; done\n"
	if err := os.WriteFile(prog, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Run("run", func(t *testing.T) {
		s := Start(t, filepath.Join(dir, "s.sock"), 80, 24, []string{"PATH=/usr/bin:/bin"}, []string{prog, dir}, In(work), StopAtCleanup())
		s.WaitFor(`ready`)
		if mode := s.TTYMode(); !strings.Contains(mode, "-icanon") || !strings.Contains(mode, "-echo") {
			t.Errorf("TTYMode of a pane the program set key by key: %q", mode)
		}
	})
	if b, err := os.ReadFile(filepath.Join(dir, "stopped")); err != nil || string(b) != "stopped\n" {
		t.Errorf("after the test's end, the program's stop wrote %q (%v): it was not stopped and waited for", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "pwd")); err != nil || strings.TrimSpace(string(b)) != work {
		t.Errorf("the program ran in %q (%v), want %s", b, err, work)
	}
}
