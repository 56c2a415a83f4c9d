//go:build unix

package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// Nobody is the uid and gid of a test's second user of this computer: nobody.
const Nobody = 65534

// AsNobody builds the Go command pkg (a path like "./squatter", from the folder of the file
// that calls AsNobody) into a folder that Nobody can reach, removed when t ends, and returns it
// with args, ready to start as Nobody, from "/", its stderr the test's. Starting a process as
// another user needs root: without it the test is skipped, except under CI, where it fails
// (NeedRoot); what says what the process is, for that message.
func AsNobody(t testing.TB, what, pkg string, args ...string) *exec.Cmd {
	t.Helper()
	NeedRoot(t, what)
	dir, err := os.MkdirTemp("", "testbin-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(1)
	bin := filepath.Join(dir, filepath.Base(pkg))
	build := exec.Command("go", "build", "-o", bin, pkg)
	build.Dir = filepath.Dir(file)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody, Groups: []uint32{}}}
	cmd.Dir = "/"
	cmd.Stderr = os.Stderr
	return cmd
}
