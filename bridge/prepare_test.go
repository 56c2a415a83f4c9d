package bridge_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/tokenfile"
)

// TestHomeTheAppCannotPassOn: a host whose home folder's path holds a backslash gives a tmux
// socket path the app cannot carry through every login shell. The connection says so, the path
// shown once (a backslash is not escaped again), with what to do, and is retried. (A control
// character in the home's path is refused earlier, by the install.)
func TestHomeTheAppCannotPassOn(t *testing.T) {
	t.Parallel()
	var socket string
	w := startWorld(t, worldOptions{noWait: true, host: func(w *world) {
		home := filepath.Join(w.sshd.Home, `back\slash`)
		if err := os.Mkdir(home, 0o700); err != nil {
			t.Fatal(err)
		}
		socket = home + "/.krad-ade/tmux/krad-ade"
		w.writeBashrc("HOME='" + home + "'; export HOME\n")
	}})
	want := ": look at the host: the tmux socket " + socket + " is not an absolute path the app can pass on: " +
		"the home folder's path there holds a backslash or a control character; give the user a home folder without them"
	deadline := time.After(60 * time.Second)
	for {
		select {
		case s := <-w.states:
			if strings.HasPrefix(s, "retrying in ") && strings.Contains(s, "tmux socket") {
				if !strings.HasSuffix(s, want) {
					t.Fatalf("the status is %q, want it to end %q", s, want)
				}
				return
			}
		case <-deadline:
			t.Fatalf("no status about the tmux socket within 60 s; now %s", w.bridge.Status())
		}
	}
}

// TestEachStepNamedOnce: a step of the host's preparation that fails is named once in the
// status, by the package that took it, with nothing before it but the wait: neither the
// bridge nor the connection says the step again. (The status once read "on connect: write the
// token file on the host: write the token file on the host: …".)
func TestEachStepNamedOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		folder string // under the host's ~/.krad-ade, made a symbolic link
		want   string // the status after "retrying in …: "
	}{
		{"the token file", "run", "write the token file: ~/.krad-ade/run is a symbolic link: refused; remove it"},
		{"the install", "bin", "install krad: look in ~/.krad-ade/bin/" + version.Build + ": ~/.krad-ade/bin is a symbolic link: refused; remove it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := startWorld(t, worldOptions{noWait: true, host: func(w *world) {
				if err := os.Mkdir(filepath.Join(w.sshd.Home, ".krad-ade"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(t.TempDir(), filepath.Join(w.sshd.Home, ".krad-ade", tt.folder)); err != nil {
					t.Fatal(err)
				}
			}})
			deadline := time.After(60 * time.Second)
			for {
				select {
				case s := <-w.states:
					if !strings.HasPrefix(s, "retrying in ") {
						continue
					}
					if _, got, _ := strings.Cut(s, ": "); got != tt.want {
						t.Fatalf("the status is %q, want \"retrying in …: %s\"", s, tt.want)
					}
					return
				case <-deadline:
					t.Fatalf("no retry within 60 s; now %s", w.bridge.Status())
				}
			}
		})
	}
}

// TestFirstConnectInstallsInOneExec: the first connect to a host that has nothing of krad's
// costs the host three SSH sessions: the connect's sh (which checks the forward, looks at the
// host, and then becomes tmux's attach), the token file's write (the token on its stdin), and
// the install, whose copy, check and trial run are one exec.
func TestFirstConnectInstallsInOneExec(t *testing.T) {
	w := startWorld(t)
	if _, err := os.Stat(filepath.Join(w.sshd.Home, ".krad-ade", "bin", version.Build, "krad")); err != nil {
		t.Fatalf("krad is not installed on the host: %v", err)
	}
	// sshd's log reaches the test through a pipe, a moment after the sessions it tells of.
	deadline := time.Now().Add(10 * time.Second)
	n := strings.Count(w.sshd.Log(), "Starting session:")
	for ; n < 3 && time.Now().Before(deadline); n = strings.Count(w.sshd.Log(), "Starting session:") {
		time.Sleep(10 * time.Millisecond)
	}
	if n != 3 {
		t.Errorf("the first connect opened %d sessions on the host, want 3 (the connect's sh, the token file's write, the install)\n%s", n, w.sshd.Log())
	}
}

// TestReconnectAsksLittleOfTheHost: a reconnect to a host whose token file still holds the token
// and whose krad is the one verified costs the host one SSH session, the connect's sh, which
// checks the forward, looks at the host, and then becomes tmux's attach; the token file is left
// as it is. A token file removed meanwhile is written again at the next reconnect, with the
// token, in a session of its own.
func TestReconnectAsksLittleOfTheHost(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	path := filepath.Join(w.sshd.Home, ".krad-ade", "run", "test-instance", "token")
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	reconnect := func() (sessions int) {
		t.Helper()
		for len(w.events) > 0 {
			<-w.events
		}
		logged := strings.Count(w.sshd.Log(), "Starting session:")
		for _, pid := range w.sshd.Sessions() {
			syscall.Kill(pid, syscall.SIGKILL) // the connection's sshd: the connection ends
		}
		w.event(60*time.Second, "environment_down after the kill", appEvent(api.EnvironmentDown, nil))
		w.event(60*time.Second, "environment_up after the reconnect", appEvent(api.EnvironmentUp, nil))
		// A look for groups to retire, were one made, starts just after the attach.
		time.Sleep(time.Second)
		return strings.Count(w.sshd.Log(), "Starting session:") - logged
	}

	if n := reconnect(); n != 1 {
		t.Errorf("the reconnect opened %d sessions on the host, want 1 (the connect's sh, in which tmux then attaches)", n)
	}
	if after, err := os.Stat(path); err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the token file was written again (or is gone: %v), want it left as it was", err)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if n := reconnect(); n != 2 {
		t.Errorf("the reconnect after the token file's loss opened %d sessions on the host, want 2 (with its write)", n)
	}
	if got, err := tokenfile.Read(path); err != nil || !got.Equal(w.token) {
		t.Fatalf("the token file after the reconnect: %v, want it written again with the token", err)
	}
}

// TestReconnectListsListenersThroughKrad: the first connect's check of the forward reads the
// host's /proc/net/tcp (grep), our uid (id -u) and the sshd session's descriptors (ls -l
// /proc/PID/fd), each logged here by a wrapper first in the PATH; a reconnect asks the static
// krad installed by then for all three instead, and starts none of those programs for them.
// Nor does the reconnect start a chmod (the folders under ~/.krad-ade are owner-only already),
// or git (the host has no global git config to name an askpass), and it starts one sh, the
// connect's own: the looks run in a subshell of it.
// With that krad gone, a reconnect reads the files again and comes up all the same (its look
// installs krad again).
func TestReconnectListsListenersThroughKrad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "programs.log")
	for _, name := range []string{"grep", "id", "ls", "chmod", "git", "sh"} {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		// One line a run: "NAME: ARGS" (no argument of these holds a newline here).
		wrapper := fmt.Sprintf("#!/bin/sh\nprintf '%s: %%s\\n' \"$*\" >>'%s'\nexec '%s' \"$@\"\n", name, log, path)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(wrapper), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	bashrc := fmt.Sprintf("export PATH='%s':\"$PATH\"\n", dir)
	w := startWorld(t, worldOptions{host: func(w *world) { w.writeBashrc(bashrc) }})
	// runs counts the logged runs that match re, a line "NAME: ARGS".
	runs := func(re string) int {
		b, _ := os.ReadFile(log)
		return len(regexp.MustCompile(`(?m)^`+re+`$`).FindAllString(string(b), -1))
	}
	logged := func() string { b, _ := os.ReadFile(log); return string(b) }
	// How many times the check's programs ran: grep of /proc/net/tcp, id -u, ls -l /proc/N/fd.
	procReads := func() int {
		return runs(`grep: .*/proc/net/tcp.*`) + runs(`id: -u`) + runs(`ls: -l /proc/[0-9]+/fd`)
	}
	if procReads() == 0 {
		t.Fatal("the first connect read no /proc/net/tcp through grep: the wrapper did not log")
	}
	reconnect := func() {
		t.Helper()
		for len(w.events) > 0 {
			<-w.events
		}
		for _, pid := range w.sshd.Sessions() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		w.event(60*time.Second, "environment_down after the kill", appEvent(api.EnvironmentDown, nil))
		w.event(60*time.Second, "environment_up after the reconnect", appEvent(api.EnvironmentUp, nil))
	}
	n, chmods, shells := procReads(), runs(`chmod: .*`), runs(`sh: .*`)
	if chmods == 0 {
		t.Fatal("the first connect, which made the folders, started no chmod: the wrapper did not log")
	}
	reconnect()
	if got := procReads(); got != n {
		t.Errorf("the reconnect ran the check's programs %d times, want none: krad lists the listeners, our uid and the session's sockets; they ran:\n%s", got-n, logged())
	}
	if got := runs(`chmod: .*`); got != chmods {
		t.Errorf("the reconnect started chmod %d times, want none: every folder was owner-only already; the log:\n%s", got-chmods, logged())
	}
	if got := runs(`sh: .*`); got != shells+1 {
		t.Errorf("the reconnect started sh %d times, want once (the connect's sh, whose subshells run the looks); the log:\n%s", got-shells, logged())
	}
	if runs(`git: .*`) != 0 {
		t.Errorf("the connects started git, which the host's lack of a global git config makes needless; the log:\n%s", logged())
	}
	bin := w.bridge.Vars().BinDir
	if bin == "" {
		t.Fatal("no krad folder after the connect")
	}
	if err := os.Remove(filepath.Join(bin, "krad-ade-agents")); err != nil {
		t.Fatal(err)
	}
	n = procReads()
	reconnect()
	if procReads() == n {
		t.Error("with krad-ade-agents gone, the reconnect did not read /proc/net/tcp")
	}
	if _, err := os.Stat(filepath.Join(bin, "krad-ade-agents")); err != nil {
		t.Errorf("krad-ade-agents after the reconnect: %v, want it installed again", err)
	}
}

// TestHealHolds: the connection's sshd session is killed 20 times in a row, each time once the
// environment is back up. Every heal holds: for 5 s after each, no further environment_down comes
// and the connection never leaves connected (the old session's tmux client, or the clean-up of the
// stale session, must not end the new one), and the host's lead answers through it.
func TestHealHolds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills the connection 20 times and watches each heal for 5 s")
	}
	w := startWorld(t)
	const kills, hold = 20, 5 * time.Second
	for i := range kills {
		for len(w.events) > 0 {
			<-w.events
		}
		for _, pid := range w.sshd.Sessions() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		w.event(60*time.Second, fmt.Sprintf("environment_down after kill %d", i+1), appEvent(api.EnvironmentDown, nil))
		w.event(60*time.Second, fmt.Sprintf("environment_up after kill %d", i+1), appEvent(api.EnvironmentUp, nil))
		for len(w.states) > 0 {
			<-w.states
		}
		quiet := time.After(hold)
	watch:
		for {
			select {
			case a := <-w.events:
				var msg string
				if appEvent(api.EnvironmentDown, &msg)(a) {
					t.Fatalf("heal %d fell again within %s: environment_down %q", i+1, hold, msg)
				}
			case s := <-w.states:
				if !strings.HasPrefix(s, "connected") {
					t.Fatalf("heal %d fell again within %s: the connection is %s", i+1, hold, s)
				}
			case <-quiet:
				break watch
			}
		}
		w.screen(w.as(1), 1, "") // the lead's screen reads through the healed connection
	}
}
