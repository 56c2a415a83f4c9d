package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// buildEnv is config.toml's table of the SSH environment build, on the host buildbox.
func buildEnv(dir string) string {
	return fmt.Sprintf("[[environment]]\nname = \"build\"\nssh = \"buildbox\"\ndir = %q\n", dir)
}

// kradList runs krad list on this computer, as a person does: it finds the app through api.json.
func (w *sshWorld) kradList() string {
	w.t.Helper()
	bin := testbin.Dir(w.t)
	cmd := exec.Command(filepath.Join(bin, "krad"), "list")
	cmd.Env = baseEnv(bin, w.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("krad list: %v:\n%s", err, out)
	}
	return string(out)
}

// listed waits until krad list on this computer shows (or, with !want, no longer shows) the
// terminal id.
func (w *sshWorld) listed(id string, want bool) {
	w.t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + `\s`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		out := w.kradList()
		if re.MatchString(out) == want {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("krad list shows %s: %v after 60 s, want %v:\n%s\nthe log:\n%s", id, !want, want, out, w.app.Log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hostPane is the window and the pid of the process of terminal build:n on the host.
func (w *sshWorld) hostPane(n int) (window, pid string) {
	w.t.Helper()
	// The app marks a window just after it has made it.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, err := w.hostTmux("list-windows", "-t", "build", "-f", fmt.Sprintf("#{==:#{@krad_terminal},build:%d}", n),
			"-F", "#{window_id} #{pane_pid}").Output()
		window, pid, _ = strings.Cut(strings.TrimSpace(string(out)), " ")
		if err == nil && window != "" {
			return window, pid
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no window of build:%d on the host: %q, %v", n, out, err)
		}
	}
}

// hostKradList runs krad list in a terminal of the app on the host, typed as a person would, and
// returns the screen once its exit status is shown.
func (w *sshWorld) hostKradList(window string, try int) string {
	w.t.Helper()
	mark := fmt.Sprintf("rc%d", try)
	if err := w.hostTmux("send-keys", "-t", window, fmt.Sprintf(`clear; krad list; echo "%s=$?"`, mark), "Enter").Run(); err != nil {
		w.t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^` + mark + `=\d+$`)
	var screen string
	deadline := time.Now().Add(30 * time.Second)
	for !re.MatchString(screen) {
		if time.Now().After(deadline) {
			w.t.Fatalf("no exit status of krad list on the host within 30 s:\n%s", screen)
		}
		time.Sleep(100 * time.Millisecond)
		out, _ := w.hostTmux("capture-pane", "-p", "-t", window).Output()
		screen = string(out)
	}
	if !strings.Contains(screen, mark+"=0") || !regexp.MustCompile(`(?m)^build:1\s+shell\s`).MatchString(screen) {
		w.t.Fatalf("krad list in build:1 on the host:\n%s\nthe log:\n%s", screen, w.app.Log)
	}
	return screen
}

// logged waits for a line of the log that matches re, after its first at bytes.
func (w *sshWorld) logged(at int, re *regexp.Regexp) {
	w.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !re.MatchString(w.app.Log.String()[at:]); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			w.t.Fatalf("no line like %s in the log within 30 s:\n%s", re, w.app.Log.String()[at:])
		}
	}
}

// The case: SSH environments added to, changed in and removed from config.toml while the
// app runs, with no restart. An added host is connected and prepared, and krad list works in its
// terminal; a removed one is closed as at the app's exit (its terminals run on in tmux on the
// host, its token file is removed) and the app no longer lists it; named again, its terminals are
// adopted with their numbers; one whose settings change is connected again. A config.toml that
// does not parse changes nothing.
func TestSSHEnvironmentsFollowConfigWhileTheAppRuns(t *testing.T) {
	w := newSSHWorld(t, "")
	w.write(filepath.Join(w.home, ".ssh", "known_hosts"), w.sshd.KnownHostsLine(0)+"\n")
	cfg := filepath.Join(w.home, "krad-ade", "config.toml")
	w.write(cfg, "")
	w.start()
	w.app.WaitLine(20*time.Second, regexp.MustCompile(`^krad-ade: environment main: `))
	if w.hostTmux("has-session", "-t", "build").Run() == nil {
		t.Fatal("the host has a session build before config.toml names it")
	}

	// Added: connected, prepared, its terminal served.
	w.write(cfg, buildEnv("~"))
	w.served()
	w.listed("build:1", true)
	window, pid := w.hostPane(1)
	w.hostKradList(window, 1)
	tokenDir := filepath.Join(w.sshd.Home, ".krad-ade", "run")
	tokens, _ := filepath.Glob(filepath.Join(tokenDir, "*", "token"))
	if len(tokens) != 1 {
		t.Fatalf("token files on the host: %v, want one", tokens)
	}

	// A config.toml that does not parse changes nothing.
	w.write(cfg, "[[environment]]\nname = \"build\"\nssh = \n")
	w.logged(0, regexp.MustCompile(`msg="config.toml not applied: nothing changed"`))
	if out := w.kradList(); !strings.Contains(out, "build:1") {
		t.Fatalf("a broken config.toml dropped build:\n%s", out)
	}

	// Removed: the app forgets it; its terminal runs on, on the host; its token file is gone.
	w.write(cfg, "")
	w.listed("build:1", false)
	for deadline := time.Now().Add(20 * time.Second); exists(tokens[0]); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the token file stayed on the host after the environment was removed")
		}
	}
	if _, after := w.hostPane(1); after != pid {
		t.Fatalf("build:1's process on the host is %s after the removal, was %s", after, pid)
	}

	// Named again: adopted, the same process as build:1, and krad list works in it again.
	w.write(cfg, buildEnv("~"))
	w.listed("build:1", true)
	if _, after := w.hostPane(1); after != pid {
		t.Fatalf("build:1's process on the host is %s after it was named again, was %s", after, pid)
	}
	if out := w.kradList(); strings.Contains(out, "build:2") {
		t.Fatalf("the app opened a second terminal rather than adopt build:1:\n%s", out)
	}
	w.hostKradList(window, 2)

	// Changed: connected again, with the new settings.
	at := len(w.app.Log.String())
	w.write(cfg, buildEnv("/"))
	w.logged(at, regexp.MustCompile(`msg="environment closed: .*environment=build .*changed in config.toml`))
	w.logs(at, "connected: 127.0.0.1:")
	w.listed("build:1", true)
	w.hostKradList(window, 3)
	if _, after := w.hostPane(1); after != pid {
		t.Fatalf("build:1's process on the host is %s after the change, was %s", after, pid)
	}
	_ = os.Remove(cfg)
}

// A config.toml truncated and left empty past the watcher's settle (150 ms) before its write, as
// a writer held off on a busy machine leaves it (os.WriteFile, an editor that saves in place),
// closes no SSH environment: the empty file would close build, so the app holds it until the
// file has been left alone 2 s, and the write comes first. Before, such a file closed build and
// connected it again (TestSSHEnvironmentsFollowConfigWhileTheAppRuns failed so under load).
func TestTruncatedConfigClosesNoEnvironment(t *testing.T) {
	w := newSSHWorld(t, "")
	w.write(filepath.Join(w.home, ".ssh", "known_hosts"), w.sshd.KnownHostsLine(0)+"\n")
	cfg := filepath.Join(w.home, "krad-ade", "config.toml")
	w.write(cfg, buildEnv("~"))
	w.start()
	w.served()
	w.listed("build:1", true)
	_, pid := w.hostPane(1)

	at := len(w.app.Log.String())
	if err := os.Truncate(cfg, 0); err != nil {
		t.Fatal(err)
	}
	// The watcher looked at the empty file past its settle, and holds it.
	w.logged(at, regexp.MustCompile(`msg="config.toml closes SSH environments, but it changed a moment ago.*environments=build\n`))
	w.write(cfg, "notify = false\n"+buildEnv("~"))
	// The config written is applied (every change writes api.json again)...
	w.logged(at, regexp.MustCompile(`msg="discovery on: api.json written"`))
	// ...and build was never closed.
	if log := w.app.Log.String()[at:]; strings.Contains(log, "environment closed") || strings.Contains(log, "environment added") {
		t.Fatalf("build was closed and added again:\n%s", log)
	}
	if out := w.kradList(); !strings.Contains(out, "build:1") {
		t.Fatalf("krad list after the write:\n%s", out)
	}
	if _, after := w.hostPane(1); after != pid {
		t.Fatalf("build:1's process on the host is %s after the write, was %s", after, pid)
	}
}
