package testbin

import (
	"os"
	"os/exec"
	"testing"
)

// Need returns the path of program, a real program the test runs (tmux, nc, ssh-agent). When it
// is missing the test is skipped, except under CI (CI set), where scripts/test installs it and
// its absence is a failure: a test that skips there proves nothing. pkg is the Debian package
// that has it, for the message.
func Need(t testing.TB, program, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err == nil {
		return path
	}
	missing(t, program+" is missing: apt-get install "+pkg)
	return ""
}

// NeedRoot skips a test that must run a process as another user (what needs it says why) when
// it does not run as root, except under CI, where it fails: CI runs the tests as root.
func NeedRoot(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, what+" needs root")
	}
}

// Cannot skips a test that this computer cannot run, why saying what it lacks (a mount a
// container forbids, say), except under CI, where it fails, as Need does: CI runs the tests where
// they can run.
func Cannot(t testing.TB, why string) {
	t.Helper()
	missing(t, why)
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why + ", and CI must run this test")
	}
	t.Skip(why)
}
