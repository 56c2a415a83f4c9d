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

// TestExited: Exited says no while the command runs, yes once it has exited while it is still a
// zombie (not reaped: Wait still gets its status), and yes once it was reaped.
func TestExited(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "read line; exit 4")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if Exited(pid) {
		t.Fatal("Exited says yes for a command that runs")
	}
	stdin.Close()
	if err := WaitExited(pid); err != nil {
		t.Fatal(err)
	}
	if !Exited(pid) {
		t.Error("Exited says no for a command that exited (a zombie)")
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Errorf("Wait = %v, want exit status 4: Exited reaped it", err)
	}
	if !Exited(pid) {
		t.Error("Exited says no for a command reaped")
	}
}
