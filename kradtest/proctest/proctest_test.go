package proctest

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
)

// TestRunning: this process runs; a child that has ended and is not yet reaped (a zombie) does
// not, nor one that is gone.
func TestRunning(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if !Running(os.Getpid()) {
		t.Fatal("this process does not run")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	for Running(pid) { // it ends at once; unreaped, it stays a zombie
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
		t.Fatalf("the unreaped child is gone: %v", err)
	}
	_ = cmd.Wait()
	if Running(pid) {
		t.Error("a reaped child runs")
	}
}
