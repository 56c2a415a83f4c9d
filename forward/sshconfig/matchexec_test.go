package sshconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMatchExec: a Match exec command runs under sh with its tokens expanded, its exit status
// decides, and it runs only when the criteria before it held.
func TestMatchExec(t *testing.T) {
	dir := t.TempDir()
	config := `
Match host nope exec "touch ` + dir + `/skipped"
  User skipped
Match exec "echo %h %p %r %n > ` + dir + `/ran; test %n = yes"
  User matched
Match exec "exit 3"
  Port 3
Host *
  Port 2222
`
	for _, tc := range []struct{ host, user string }{{"yes", "matched"}, {"no", localUser()}} {
		h, w, err, _ := resolveWith(t, Options{Host: tc.host}, config, "")
		if err != nil || len(w) != 0 {
			t.Fatalf("Resolve(%s) = %v, %v", tc.host, err, w)
		}
		if h.User != tc.user || h.Port != 2222 {
			t.Errorf("Resolve(%s) = %s@%s:%d, want user %s, port 2222", tc.host, h.User, h.HostName, h.Port, tc.user)
		}
		got, _ := os.ReadFile(filepath.Join(dir, "ran"))
		// The exec runs during the files' reading, before the Port line.
		if want := tc.host + " 22 " + localUser() + " " + tc.host + "\n"; string(got) != want {
			t.Errorf("the command saw %q, want %q", got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "skipped")); err == nil {
		t.Error("the exec after a criterion that failed ran")
	}
}

// TestMatchExecRefusesShellTokens: a token whose value the shell would read as more than text
// is refused, and nothing runs.
func TestMatchExecRefusesShellTokens(t *testing.T) {
	dir := t.TempDir()
	config := "Match exec \"touch " + dir + "/ran-%r\"\n  Port 2\n"
	_, _, err, _ := resolveWith(t, Options{Host: "x;id@host"}, config, "")
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "characters the shell would act on") {
		t.Fatalf("Resolve = %v, want a *ConfigError about the shell", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a command ran: %v", ents)
	}
}

// TestMatchExecTimeLimit: a command that runs past its limit is ended with everything it
// started, and the connect fails with an error that is retried (not a *ConfigError).
func TestMatchExecTimeLimit(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	start := time.Now()
	_, err := runMatchExec("sleep 60 & echo $! > "+pidFile+"; trap '' TERM; echo waiting >&2; wait", 300*time.Millisecond)
	if !errors.Is(err, errExecTimeout) || !strings.Contains(err.Error(), "waiting") {
		t.Fatalf("runMatchExec = %v, want a timeout that says the command's last line", err)
	}
	if d := time.Since(start); d > 300*time.Millisecond+killGrace+2*time.Second {
		t.Errorf("took %s", d)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the command's child %d outlived it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A command killed by a signal is an error too, as ssh gives up on the config then.
	if _, err := runMatchExec("kill -9 $$", time.Second); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("runMatchExec(kill -9 $$) = %v, want an error", err)
	}
	if st, err := runMatchExec("exit 5", time.Second); st != 5 || err != nil {
		t.Errorf("runMatchExec(exit 5) = %d, %v", st, err)
	}

	r := &resolver{files: nil, home: t.TempDir(), localUser: "u",
		runExec: func(string, time.Duration) (int, error) { return 0, errExecTimeout }}
	file := filepath.Join(r.home, "config")
	os.WriteFile(file, []byte("Match exec true\n  Port 2\n"), 0o600)
	r.files = []string{file}
	_, err = r.resolve("h", 0, true)
	var ce *ConfigError
	if !errors.Is(err, errExecTimeout) || errors.As(err, &ce) || !strings.Contains(err.Error(), file+" line 1: Match exec") {
		t.Errorf("resolve = %v, want the timeout, naming the line, and no *ConfigError", err)
	}
}
