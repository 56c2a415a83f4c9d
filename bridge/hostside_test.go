package bridge_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/discovery"
	"github.com/krad-ade/krad/kradtest/roguetmux"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// writeBashrc writes the host user's ~/.bashrc, which bash reads for every command sshd runs.
func (w *world) writeBashrc(content string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.sshd.Home, ".bashrc"), []byte(content), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// stuck is what a ~/.bashrc that holds a step of a connect left on the host: the file where each
// process that got stuck records its pid and its session, as "pid sid" lines.
type stuck struct{ record string }

// recordSelf is sh that appends "pid sid" of the shell that runs it to the file rec.
func recordSelf(rec string) string {
	return fmt.Sprintf(`set -- $(sed 's/^.*) //' /proc/$$/stat); echo "$$ $4" >> '%s'; `, rec)
}

// sessions are the sessions the stuck processes were in.
func (s stuck) sessions(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile(s.record)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var sids []int
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			sid, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("a stuck process recorded %q", l)
			}
			sids = append(sids, sid)
		}
	}
	return sids
}

// survivors are the processes that have not ended in the sessions of the stuck processes recorded
// so far (the host is this computer).
func (s stuck) survivors(t *testing.T) []string {
	t.Helper()
	var alive []string
	for _, sid := range s.sessions(t) {
		for _, p := range sshdtest.InSession(sid) {
			alive = append(alive, fmt.Sprintf("%s in session %d", p, sid))
		}
	}
	return alive
}

// noneSurvive fails the test unless, within 20 s, no process of the recorded stuck ones' sessions
// is left on the host; it says how many sessions there were.
func (s stuck) noneSurvive(t *testing.T, when string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := s.survivors(t)
		if len(left) == 0 {
			t.Logf("%s: none of the %d stuck sessions' processes is left", when, len(s.sessions(t)))
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s, 20 s on: processes of the given-up attempts are still running on the host: %v", when, left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stuckOn is a ~/.bashrc that loops, while the file hold exists, in the shells that run a
// command matching the case pattern: every command of one step of a connect hangs there. Each
// shell that loops records itself. The test removes hold as it ends, so that any shell left
// looping ends too.
func stuckOn(t *testing.T, pattern string) (string, stuck) {
	dir := t.TempDir()
	hold, rec := filepath.Join(dir, "hold"), filepath.Join(dir, "stuck")
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(hold) })
	return fmt.Sprintf("case \"$BASH_EXECUTION_STRING\" in %s) %swhile [ -e '%s' ]; do sleep 0.1; done;; esac\n", pattern, recordSelf(rec), hold), stuck{rec}
}

// stuckCommand is a ~/.bashrc that gives the shells that run a command matching the case
// pattern (the sh a connect starts, * for every one) a PATH whose first folder has a program
// called name that, run with arguments matching the case pattern args, loops while the file hold
// exists, as a command on a hung network mount would; each such run records itself. Run with
// other arguments it runs the real program: a process that inherits the PATH of a stuck shell
// (a tmux server, and the panes it starts) goes on as on any host.
func stuckCommand(t *testing.T, name, pattern, args string) (string, stuck) {
	dir := t.TempDir()
	hold, rec := filepath.Join(dir, "hold"), filepath.Join(dir, "stuck")
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(hold) })
	script := fmt.Sprintf("#!/bin/sh\ncase \" $* \" in %s) ;; *) PATH=$(echo \"$PATH\" | sed 's|^%s:||') exec %s \"$@\";; esac\n%swhile [ -e '%s' ]; do sleep 0.1; done\n",
		args, dir, name, recordSelf(rec), hold)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("case \"$BASH_EXECUTION_STRING\" in %s) export PATH='%s':\"$PATH\";; esac\n", pattern, dir), stuck{rec}
}

// connectSh is the case pattern of the sh a connect starts (forward's "exec sh -s MARK").
const connectSh = `"exec sh -s "*`

// TestStuckStartupFilesTimeOut: a ~/.bashrc that loops, or that puts a program that hangs first
// in the PATH, holds the commands of one step of a connect. Each step has a deadline: when it
// passes the app says which step (the connection's status, or for tmux an environment_down event)
// and tries again, and once the loop is gone from the .bashrc the environment comes up, with no
// restart. What each given-up attempt started on the host ends with it (sshd here runs as root,
// which does not let the client signal a session: the app ends them from the host itself): no
// process of a stuck session is left once the app has said the step failed; a connect's first
// shell that never got past ~/.bashrc, which nothing on the host can reach while ~/.bashrc loops
// for every shell, is ended by the first connect whose shell runs.
func TestStuckStartupFilesTimeOut(t *testing.T) {
	t.Parallel()
	for _, step := range []struct {
		name  string
		stuck func(t *testing.T) (string, stuck)
		tmux  bool // reported by the app's event, not the connection's status
		first bool // the connect's first shell is what hangs in ~/.bashrc
	}{
		{"checking the forward", func(t *testing.T) (string, stuck) { return stuckOn(t, connectSh) }, false, true},
		// The looks (the platform, krad, the token file, tmux) run in the sh that checked the
		// forward, where no start-up file runs: a command there that hangs (here uname, from
		// a PATH that ~/.bashrc gave the sh, as a hung network mount would) holds them.
		{"preparing the host", func(t *testing.T) (string, stuck) { return stuckCommand(t, "uname", connectSh, "*") }, false, false},
		// The token file's write, a command of its own, and the copy of krad.
		{"writing the token file", func(t *testing.T) (string, stuck) { return stuckOn(t, `*__KRAD_TOKENFILE_BEGIN__*`) }, false, false},
		{"installing krad", func(t *testing.T) (string, stuck) { return stuckOn(t, `*__KRAD_UPLOAD_BEGIN__*`) }, false, false},
		// A connection's first attach runs tmux in the connect's sh, a later one in a session of
		// its own: a tmux control client that hangs (in every shell's PATH) holds both.
		{"starting tmux", func(t *testing.T) (string, stuck) { return stuckCommand(t, "tmux", "*", `*" -C "*`) }, true, false},
	} {
		t.Run(strings.ReplaceAll(step.name, " ", "-"), func(t *testing.T) {
			const d = 3 * time.Second
			bashrc, held := step.stuck(t)
			w := startWorld(t, worldOptions{
				noWait:         true,
				commandTimeout: d,
				host:           func(w *world) { w.writeBashrc(bashrc) },
			})
			said := "the host did not finish " + step.name + " within 3s: "
			if step.tmux {
				var msg string
				w.event(60*time.Second, "environment_down for tmux's deadline", appEvent(api.EnvironmentDown, &msg))
				if !strings.HasPrefix(msg, said) || !strings.Contains(msg, "ssh 'buildbox' true") {
					t.Errorf("environment_down says %q, want it to start with %q and say what to check", msg, said)
				}
			} else {
				re := regexp.MustCompile(`^retrying in \S+: ` + regexp.QuoteMeta(said) + `.*~/\.bashrc.*: ssh 'buildbox' true`)
				deadline := time.After(60 * time.Second)
				for found := false; !found; {
					select {
					case s := <-w.states:
						found = re.MatchString(s)
					case <-deadline:
						t.Fatalf("no status %q within 60 s; now %s", re, w.bridge.Status())
					}
				}
			}
			if len(held.sessions(t)) == 0 {
				t.Fatalf("no process recorded that it was stuck")
			}
			if !step.first {
				held.noneSurvive(t, "once the app gave the step up")
			}
			select {
			case <-w.app.ReadyOf("build"):
				t.Fatalf("environment build came up with its %s stuck", step.name)
			default:
			}
			w.writeBashrc("")
			select {
			case <-w.app.ReadyOf("build"):
			case <-time.After(60 * time.Second):
				t.Fatalf("environment build did not come up within 60 s of the fix: %s", w.bridge.Status())
			}
			held.noneSurvive(t, "once the environment came up")
		})
	}
}

// stopTmux stops the host's tmux server, as a hung host would, until the returned function
// (also run when the test ends) lets it go on.
func (w *world) stopTmux() (resume func()) {
	w.t.Helper()
	out, err := w.hostTmux("display-message", "-p", "#{pid}").Output()
	if err != nil {
		w.t.Fatalf("the host's tmux server: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		w.t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		w.t.Fatal(err)
	}
	resume = func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	w.t.Cleanup(resume)
	return resume
}

// clientList is what a Client (a status bar on this computer) lists, by terminal.
func (w *world) clientList() map[string]api.Agent {
	w.t.Helper()
	var agents []api.Agent
	w.call(&api.Client{Endpoint: w.bus.Addr(), Token: w.token, From: api.FromClient}, api.List, nil, &agents)
	m := map[string]api.Agent{}
	for _, a := range agents {
		m[a.ID().String()] = a
	}
	return m
}

// kradList runs krad list on this computer outside the app's terminals, as a person would: it
// finds the bus through api.json.
func (w *world) kradList() string {
	w.t.Helper()
	config := w.t.TempDir()
	f := discovery.File{APIVersion: api.Version, Endpoint: w.bus.Addr(), Token: w.token, PID: os.Getpid(), StartedAt: time.Now()}
	if err := discovery.Write(filepath.Join(config, "krad-ade"), f); err != nil {
		w.t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(testbin.Dir(w.t), "krad"), "list")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + config, "XDG_CONFIG_HOME=" + config}
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("krad list: %v:\n%s", err, out)
	}
	return string(out)
}

// TestSilentTmuxGoesDown: the host's tmux stops answering (SIGSTOP) while the SSH connection
// stays up. The environment goes down with a message within the app's bound; meanwhile a Client
// and krad list show its agents unreachable, not idle or working, and this computer's as they
// are. Once tmux answers again the app attaches by itself and the agents have their states back.
func TestSilentTmuxGoesDown(t *testing.T) {
	t.Parallel()
	w := startWorld(t, worldOptions{tmuxTimeout: 2 * time.Second})
	var worker api.Agent
	w.call(w.as(1), api.Spawn, &api.SpawnBody{Title: "busy", Command: []string{"sh", "-c", "krad report working; sleep 300"}}, &worker)
	id := worker.ID().String()
	for deadline := time.Now().Add(30 * time.Second); w.clientList()[id].State != api.StateWorking; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker is %s, not working, after 30 s", w.clientList()[id].State)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); w.clientList()["build:1"].State != api.StateIdle; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the lead is %s, not idle, after 30 s", w.clientList()["build:1"].State)
		}
	}
	for len(w.events) > 0 {
		<-w.events
	}

	resume := w.stopTmux()
	var msg string
	w.event(60*time.Second, "environment_down", appEvent(api.EnvironmentDown, &msg))
	if !strings.Contains(msg, "tmux stopped answering") || !strings.Contains(msg, "though the SSH link to it held") {
		t.Errorf("environment_down says %q, want it to say that tmux stopped answering, and the SSH link did not", msg)
	}
	list := w.clientList()
	for _, n := range []string{"build:1", id} {
		if list[n].State != api.StateUnreachable {
			t.Errorf("while the host's tmux is stopped, a Client lists %s as %s, want unreachable", n, list[n].State)
		}
	}
	if s := list["main:1"].State; s == api.StateUnreachable {
		t.Errorf("this computer's lead is %s too", s)
	}
	out := w.kradList()
	for _, n := range []string{"build:1", id} {
		if !regexp.MustCompile(`(?m)^` + n + ` +\S+ +unreachable `).MatchString(out) {
			t.Errorf("krad list does not show %s unreachable:\n%s", n, out)
		}
	}
	if !strings.HasPrefix(w.bridge.Status().String(), "connected") {
		t.Errorf("the SSH connection is %s; it should have stayed up", w.bridge.Status())
	}

	resume()
	w.event(60*time.Second, "environment_up", appEvent(api.EnvironmentUp, nil))
	list = w.clientList()
	if list["build:1"].State != api.StateIdle || list[id].State != api.StateWorking {
		t.Errorf("back: the lead is %s and the worker %s, want idle and working", list["build:1"].State, list[id].State)
	}
	w.screen(w.as(1), worker.Terminal, "") // served again: its screen reads
}

// TestFrozenLinkGoesDown: the SSH link to the host freezes (every process of the app's sshd
// session stopped: a frozen host, a link that drops packets). tmux's silence is the link's: the
// environment goes down saying so and that the app connects again, long before the keepalives'
// 45 s would tell; and it does connect again, by itself, with the session still stopped.
func TestFrozenLinkGoesDown(t *testing.T) {
	t.Parallel()
	t.Run("tmux's silence first", func(t *testing.T) {
		t.Parallel()
		frozenLinkGoesDown(t, worldOptions{tmuxTimeout: 2 * time.Second})
	})
	// The keepalives (1 s, one missed) drop the link long before tmux's 30 s: tmux's stream ends
	// with the connection, and the connection's loss is what the person is told.
	t.Run("the keepalives first", func(t *testing.T) {
		t.Parallel()
		frozenLinkGoesDown(t, worldOptions{tmuxTimeout: 30 * time.Second, ssh: []string{"ServerAliveInterval 1", "ServerAliveCountMax 1"}})
	})
}

func frozenLinkGoesDown(t *testing.T, o worldOptions) {
	w := startWorld(t, o)
	for len(w.events) > 0 {
		<-w.events
	}
	stopped := w.sshd.SessionProcesses()
	if len(stopped) == 0 {
		t.Fatal("no sshd session to stop")
	}
	t.Cleanup(func() {
		for _, pid := range stopped {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	for _, pid := range stopped {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	var msg string
	w.event(30*time.Second, "environment_down", appEvent(api.EnvironmentDown, &msg))
	if !strings.Contains(msg, "the SSH link to ") || !strings.Contains(msg, "is not answering") || !strings.Contains(msg, "the app is connecting again") {
		t.Errorf("environment_down says %q, want it to name the SSH link as what stopped answering, and that the app connects again", msg)
	}
	w.event(60*time.Second, "environment_up", appEvent(api.EnvironmentUp, nil))
	w.screen(w.as(1), 1, "") // served again, through the new connection
}

// TestTmuxSilentAfterItsFirstReply: a tmux on the host's PATH answers the attach and then falls
// silent. The environment, never up, is said to be down with a message, and tried again; once
// the real tmux is back on PATH it comes up, with no restart.
func TestTmuxSilentAfterItsFirstReply(t *testing.T) {
	t.Parallel()
	silent := roguetmux.Write(t, t.TempDir(), roguetmux.Options{Silent: true})
	w := startWorld(t, worldOptions{noWait: true, tmuxTimeout: 2 * time.Second, host: func(w *world) {
		w.writeBashrc(`PATH=` + shell.Quote(silent.Bin) + `:$PATH` + "\n")
	}})
	var msg string
	w.event(60*time.Second, "environment_down", appEvent(api.EnvironmentDown, &msg))
	if !strings.Contains(msg, "tmux stopped answering") {
		t.Errorf("environment_down says %q, want it to say that tmux stopped answering", msg)
	}
	select {
	case <-w.app.ReadyOf("build"):
		t.Fatal("environment build came up on a tmux that answers nothing")
	default:
	}
	w.writeBashrc("")
	select {
	case <-w.app.ReadyOf("build"):
	case <-time.After(60 * time.Second):
		t.Fatalf("environment build did not come up within 60 s of the real tmux's return: %s", w.bridge.Status())
	}
	if err := w.hostTmux("has-session", "-t", "=build").Run(); err != nil {
		t.Errorf("no session build on the host's real tmux: %v", err)
	}
}

// TestAnotherUserTakesTmuxsDefaultFolder: another user of the host (uid 65534) creates tmux's
// default socket folder for our user, /tmp/tmux-UID (here under the host's TMUX_TMPDIR), before
// the app connects, which would make tmux refuse to start ("unsafe permissions") for good. The
// environment comes up all the same, on a socket in ~/.krad-ade/tmux, owner-only; the other
// user's folder is left as it was, and the attach hint works as printed.
func TestAnotherUserTakesTmuxsDefaultFolder(t *testing.T) {
	t.Parallel()
	testbin.NeedRoot(t, "acting as another user (uid 65534)")
	taken := ""
	w := startWorld(t, worldOptions{host: func(w *world) {
		if err := os.Chmod(w.tmpdir, 0o1777); err != nil { // as /tmp is
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(w.tmpdir), 0o711); err != nil { // the test's folder: a way in
			t.Fatal(err)
		}
		taken = filepath.Join(w.tmpdir, fmt.Sprintf("tmux-%d", os.Getuid()))
		mkdir := exec.Command("mkdir", "-m", "700", taken)
		mkdir.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := mkdir.CombinedOutput(); err != nil {
			t.Fatalf("mkdir %s as uid 65534: %v: %s", taken, err, out)
		}
	}})
	fi, err := os.Lstat(w.socket())
	if err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("the host's tmux socket %s: %v, %v", w.socket(), fi, err)
	}
	di, err := os.Lstat(filepath.Dir(w.socket()))
	if err != nil || !di.IsDir() || di.Mode().Perm() != 0o700 || di.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		t.Errorf("~/.krad-ade/tmux: %v, %v; want a folder of ours, mode 0700", di.Mode(), err)
	}
	ti, err := os.Lstat(taken)
	if err != nil || ti.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Errorf("the other user's %s: %v, %v; want it untouched", taken, ti, err)
	}
	if ents, _ := os.ReadDir(taken); len(ents) != 0 {
		t.Errorf("the app put %v in the other user's folder", ents)
	}
	hint := w.bridge.AttachHint("build")
	want := "ssh -t buildbox 'tmux -S ~/.krad-ade/tmux/krad-ade attach -t build'"
	if hint != want {
		t.Fatalf("the attach hint is %q, want %q", hint, want)
	}
	// The hint's remote command, with has-session for attach (there is no terminal here), run by
	// the host's shell as ssh would: the ~ is the host user's home.
	sess, err := w.sshd.Dial(t).NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if out, err := sess.CombinedOutput("tmux -S ~/.krad-ade/tmux/krad-ade has-session -t build"); err != nil {
		t.Errorf("the hint's tmux on the host: %v: %s", err, out)
	}
}

// TestTmuxFolderRefused: ~/.krad-ade/tmux is checked like the other folders under ~/.krad-ade: a
// symbolic link there (which could lead tmux's socket anywhere) is refused, the connection says
// so and is retried, and once it is removed the environment comes up.
func TestTmuxFolderRefused(t *testing.T) {
	t.Parallel()
	elsewhere := t.TempDir()
	w := startWorld(t, worldOptions{noWait: true, host: func(w *world) {
		if err := os.MkdirAll(filepath.Join(w.sshd.Home, ".krad-ade"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, filepath.Join(w.sshd.Home, ".krad-ade", "tmux")); err != nil {
			t.Fatal(err)
		}
	}})
	deadline := time.After(60 * time.Second)
	for found := false; !found; {
		select {
		case s := <-w.states:
			found = strings.HasPrefix(s, "retrying in ") && strings.HasSuffix(s, "~/.krad-ade/tmux is a symbolic link: refused; remove it")
		case <-deadline:
			t.Fatalf("no refusal of the symbolic link within 60 s; now %s", w.bridge.Status())
		}
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("the app put %v where the link leads", ents)
	}
	if err := os.Remove(filepath.Join(w.sshd.Home, ".krad-ade", "tmux")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.app.ReadyOf("build"):
	case <-time.After(60 * time.Second):
		t.Fatalf("environment build did not come up within 60 s of the fix: %s", w.bridge.Status())
	}
}

// TestEarlierVersionsTmuxServer: a host prepared by an earlier version runs its tmux server on the
// old socket (tmux -L krad-ade), with the environment's terminals in it. The app adopts them
// (attaching, never starting a server there), and says how to attach to that server; once it is
// gone the app's own socket takes its place for good.
func TestEarlierVersionsTmuxServer(t *testing.T) {
	t.Parallel()
	old := func(args ...string) *exec.Cmd {
		return exec.Command("tmux", append([]string{"-L", app.SocketName}, args...)...)
	}
	w := startWorld(t, worldOptions{host: func(w *world) {
		env := []string{"PATH=/usr/bin:/bin", "HOME=" + w.sshd.Home, "TMUX_TMPDIR=" + w.tmpdir}
		meta, _ := json.Marshal(map[string]any{"terminal": 1, "title": "old lead", "role": "lead", "session": "build:1"})
		for _, args := range [][]string{
			{"-f", "/dev/null", "new-session", "-d", "-s", "build", "-x", "200", "-y", "50", "sleep 600"},
			{"set-option", "-w", "-t", "build:0", "@krad", string(meta)},
			{"set-option", "-w", "-t", "build:0", "@krad_terminal", "build:1"},
			{"set-option", "-t", "build", "@krad_next", "2"},
		} {
			cmd := old(args...)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the earlier version's tmux %q: %v: %s", args, err, out)
			}
		}
	}})
	oldEnv := []string{"PATH=/usr/bin:/bin", "TMUX_TMPDIR=" + w.tmpdir}
	if got := w.clientList()["build:1"]; got.Title != "old lead" || got.Role != api.RoleLead {
		t.Errorf("build:1 is %+v, want the earlier version's lead, adopted", got)
	}
	if err := w.hostTmux("has-session").Run(); err == nil {
		t.Error("the app started a server of its own beside the earlier version's")
	}
	if hint, want := w.bridge.AttachHint("build"), "ssh -t buildbox tmux -L krad-ade attach -t build"; hint != want {
		t.Errorf("the attach hint is %q, want %q", hint, want)
	}

	for len(w.events) > 0 {
		<-w.events
	}
	kill := old("kill-server")
	kill.Env = oldEnv
	if out, err := kill.CombinedOutput(); err != nil {
		t.Fatalf("tmux -L krad-ade kill-server: %v: %s", err, out)
	}
	w.event(60*time.Second, "environment_up on the app's own server", appEvent(api.EnvironmentUp, nil))
	if err := w.hostTmux("has-session", "-t", "=build").Run(); err != nil {
		t.Errorf("no session build on the app's own socket: %v", err)
	}
	has := old("has-session")
	has.Env = oldEnv
	if err := has.Run(); err == nil {
		t.Error("a server runs on the old socket again")
	}
	if hint, want := w.bridge.AttachHint("build"), "ssh -t buildbox 'tmux -S ~/.krad-ade/tmux/krad-ade attach -t build'"; hint != want {
		t.Errorf("the attach hint is %q, want %q", hint, want)
	}
}
