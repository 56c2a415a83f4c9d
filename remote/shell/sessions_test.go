//go:build linux

package shell

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEndSessionsMarked: a session whose leader's command line holds the word ends whole (the
// leader and what it started), and one that does not hold it, of the same program, runs on.
func TestEndSessionsMarked(t *testing.T) {
	b := make([]byte, 8)
	rand.Read(b)
	word := "krad-test-" + hex.EncodeToString(b)
	start := func(name string) (*exec.Cmd, <-chan struct{}) {
		// A session of its own, as sshd makes one: its leader sh, a sleep it started. It is used
		// once the sh has forked the sleep (it says so in a file), not merely started.
		started := filepath.Join(t.TempDir(), "started")
		cmd := exec.Command("sh", "-c", `sleep 600 & : > "$1"; wait`, name, started)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ended := make(chan struct{})
		go func() { cmd.Wait(); close(ended) }()
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-ended })
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(started); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the session %s did not start its sleep within 10 s", name)
			}
		}
		return cmd, ended
	}
	_, ended := start(word)
	other, _ := start("krad-test-other")

	out, err := exec.Command("sh", "-c", EndSessions.Command(EndMarked, word)).Output()
	n, err := EndedSessions(out, err)
	if err != nil || n != 2 {
		t.Fatalf("EndSessions = %d, %v (%q), want 2 processes ended: the leader and its sleep", n, err, out)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the marked session's leader is still running 10 s on")
	}
	if err := syscall.Kill(other.Process.Pid, 0); err != nil {
		t.Errorf("the session without the word was ended too: %v", err)
	}
	// Nothing left to end: 0.
	out, err = exec.Command("sh", "-c", EndSessions.Command(EndMarked, word)).Output()
	if n, err := EndedSessions(out, err); err != nil || n != 0 {
		t.Errorf("EndSessions again = %d, %v, want 0", n, err)
	}
}

// TestEndSessionsMarkedInAPIDNamespace: as CI runs the tests, in a PID namespace of its own whose
// /proc does not show the script's session leader (its session id reads 0): the marked mode
// needs no leader of its own, ends the marked session there, and does not fail.
func TestEndSessionsMarkedInAPIDNamespace(t *testing.T) {
	if err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").Run(); err != nil {
		t.Skipf("cannot make a PID namespace here (unshare --pid --mount-proc: %v)", err)
	}
	b := make([]byte, 8)
	rand.Read(b)
	word := "krad-test-" + hex.EncodeToString(b)
	// In the namespace: the script's own session is the one unshare ran in, outside it (0); a
	// session of its own holds the word and two processes, and runs until both are there (its
	// sh says so once it has forked its sleep: waiting for the word in /proc alone once found
	// the sh before its sleep, on a loaded machine).
	started := filepath.Join(t.TempDir(), "started")
	inner := "setsid sh -c 'sleep 600 & : > \"$1\"; wait' " + word + " " + Quote(started) + " &\n" +
		"while [ ! -e " + Quote(started) + " ]; do sleep 0.05; done\n" +
		"read -r l < /proc/self/stat; set -- ${l##*)}; echo \"sid=$4\" >&2\n" +
		EndSessions.Command(EndMarked, word)
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", inner)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if !strings.Contains(stderr.String(), "sid=0") {
		t.Fatalf("the script's session shows as %q in the namespace, want 0: the test does not make CI's case", stderr.String())
	}
	if n, err := EndedSessions(out, err); err != nil || n != 2 {
		t.Errorf("EndSessions in a PID namespace = %d, %v (%q), want 2 processes ended", n, err, out)
	}
}
