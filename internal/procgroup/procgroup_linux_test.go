package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestWaitExited: once WaitExited returns the command has exited, and its pid is still its own
// (a zombie, not reaped) until Wait reaps it, which still gets its exit status.
func TestWaitExited(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exit 3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := WaitExited(cmd.Process.Pid); err != nil {
		t.Fatalf("WaitExited = %v", err)
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		t.Fatalf("the command was reaped: %v", err)
	}
	// The state follows the command's name in parentheses: pid (comm) S …
	if i := strings.LastIndexByte(string(stat), ')'); i < 0 || !strings.HasPrefix(string(stat[i:]), ") Z") {
		t.Errorf("/proc/PID/stat = %q, want a zombie", stat)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("Wait = %v, want exit status 3", err)
	}
}
