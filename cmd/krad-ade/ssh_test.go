package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// sshWorld is a krad-ade with one SSH environment, build, on a real sshd of the test's (the host
// is this machine), as a user sets it up: a Host block in ~/.ssh/config and config.toml.
type sshWorld struct {
	t    *testing.T
	home string // the app's HOME and XDG_CONFIG_HOME
	tmux string // the host's TMUX_TMPDIR: tmux's default socket folder there, which the app must not need
	sshd *sshdtest.Server
	key  string // the identity file, authorized on sshd
	app  *apptest.App
}

// newSSHWorld starts sshd, writes the user's files (the identity file encrypted with passphrase,
// when one is given) and the Host block with the extra lines; the test then starts the app.
func newSSHWorld(t *testing.T, passphrase string, extra ...string) *sshWorld {
	t.Helper()
	return newSSHWorldEnv(t, nil, passphrase, extra...)
}

// newSSHWorldEnv is newSSHWorld with more variables for the host's sessions.
func newSSHWorldEnv(t *testing.T, hostEnv []string, passphrase string, extra ...string) *sshWorld {
	t.Helper()
	testbin.Need(t, "tmux", "tmux")
	w := &sshWorld{t: t, home: t.TempDir(), tmux: t.TempDir()}
	ssh := filepath.Join(w.home, ".ssh")
	if err := os.Mkdir(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	w.key = filepath.Join(ssh, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "test", "-f", w.key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	w.sshd = sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{w.key + ".pub"}, Env: append([]string{"TMUX_TMPDIR=" + w.tmux}, hostEnv...)})
	t.Cleanup(func() { killUntilGone(w.hostTmux) })
	block := fmt.Sprintf("Host buildbox\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n",
		w.sshd.Port, w.sshd.User, w.key)
	for _, l := range extra {
		block += "  " + l + "\n"
	}
	w.write(filepath.Join(ssh, "config"), block)
	dir := filepath.Join(w.home, "krad-ade")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w.write(filepath.Join(dir, "config.toml"), "[[environment]]\nname = \"build\"\nssh = \"buildbox\"\ndir = \"~\"\n")
	return w
}

func (w *sshWorld) write(path, data string) {
	w.t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// start starts krad-ade with the extra variables.
func (w *sshWorld) start(env ...string) {
	w.t.Helper()
	bin := testbin.Dir(w.t)
	w.t.Cleanup(func() { killTmux(w.home) })
	w.app = apptest.Start(w.t, apptest.Options{
		Program: filepath.Join(bin, "krad-ade"),
		Env:     append(baseEnv(bin, w.home), env...),
	})
}

// hostTmux is a tmux command on the host's server of the app, whose socket is in the folder the
// app makes for it on the host.
func (w *sshWorld) hostTmux(args ...string) *exec.Cmd {
	socket := filepath.Join(w.sshd.Home, ".krad-ade", "tmux", "krad-ade")
	cmd := exec.Command("tmux", append([]string{"-S", socket}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	return cmd
}

// served waits until the environment's terminals are there on the host: the app attached to
// its tmux session, which `ssh -t buildbox 'tmux -S ~/.krad-ade/tmux/krad-ade attach -t build'`
// shows.
func (w *sshWorld) served() {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for w.hostTmux("has-session", "-t", "build").Run() != nil {
		if time.Now().After(deadline) {
			w.t.Fatalf("no tmux session build on the host within 30 s; the log:\n%s", w.app.Log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logs waits for a log line of the environment's connection whose status matches re, after
// the first `after` bytes of the log, and returns where it ends.
func (w *sshWorld) logs(after int, status string) int {
	w.t.Helper()
	re := regexp.MustCompile(`msg="environment connection" environment=build host=buildbox status="` + status + `.*\n`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		log := w.app.Log.String()
		if loc := re.FindStringIndex(log[after:]); loc != nil {
			return after + loc[1]
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no status %q in the log within 60 s:\n%s", status, log[after:])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The case: an environment failed on an unknown host key connects once the person
// trusts the key in known_hosts, without a restart of the app or anything else.
func TestEnvironmentHealsWhenKnownHostsChanges(t *testing.T) {
	w := newSSHWorld(t, "")
	w.start()
	at := w.logs(0, "failed: host key of .* is unknown")
	w.write(filepath.Join(w.home, ".ssh", "known_hosts"), w.sshd.KnownHostsLine(0)+"\n")
	w.logs(at, "connected: 127.0.0.1:")
	w.served()
}

// A fix no file shows (here a key added to the agent) is tried when the person says so:
// SIGHUP to krad-ade.
func TestSIGHUPRetriesFailedEnvironments(t *testing.T) {
	w := newSSHWorld(t, "secret")
	w.write(filepath.Join(w.home, ".ssh", "known_hosts"), w.sshd.KnownHostsLine(0)+"\n")
	sock := sshdtest.StartAgent(t)
	w.start("SSH_AUTH_SOCK=" + sock)
	at := w.logs(0, "failed: authentication of .*needs a passphrase and no agent holds it")

	// ssh-add, as the error says (the passphrase taken off a copy, since nothing here types it).
	plain := filepath.Join(t.TempDir(), "id")
	raw, err := os.ReadFile(w.key)
	if err != nil {
		t.Fatal(err)
	}
	w.write(plain, string(raw))
	for _, args := range [][]string{{"ssh-keygen", "-q", "-p", "-P", "secret", "-N", "", "-f", plain}, {"ssh-add", "-q", plain}} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", args[0], err, out)
		}
	}
	if w.hostTmux("has-session", "-t", "build").Run() == nil {
		t.Fatal("the environment is up before it was fixed")
	}
	if err := w.app.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	w.logs(at, "connected: 127.0.0.1:")
	w.served()
}

// A group on an SSH host whose last terminal closed while the app was stopped retires when the
// app comes back and attaches to the host again: its checkout on the host removed, its work kept
// on a snapshot ref in the host's repository; a group made by krad worktree create, that no
// terminal joined, stays.
func TestGroupRetiredAfterARestartOnAnSSHHost(t *testing.T) {
	testbin.Need(t, "git", "git")
	w := newSSHWorld(t, "")
	w.write(filepath.Join(w.home, ".ssh", "known_hosts"), w.sshd.KnownHostsLine(0)+"\n")
	repo := filepath.Join(w.sshd.Home, "src")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.Mkdir(repo, 0o700); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	w.write(filepath.Join(repo, "readme"), "one\n")
	git("add", ".")
	git("commit", "-q", "-m", "first")
	// The lead on the host spawns a worker into g1, which writes a file and stays, and makes g2.
	w.write(filepath.Join(w.home, "krad-ade", "config.toml"), `[[environment]]
name = "build"
ssh = "buildbox"
dir = "~/src"

[[terminal]]
environment = "build"
title = "lead"
lead = true
command = '''
krad spawn --group g1 -- sh -c 'echo work > notes.txt; echo wrote; sleep 300'
until krad read 2 | grep -q wrote; do sleep 0.1; done
krad worktree create g2 && echo made > ~/ready
sleep 300'''
`)
	w.start()
	ready := filepath.Join(w.sshd.Home, "ready")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lead on the host did not make its groups within 60 s; the log:\n%s", w.app.Log)
		}
	}
	wts := git("worktree", "list", "--porcelain")
	if strings.Count(wts, "worktree ") != 3 {
		t.Fatalf("the host's repository has these worktrees, want the main checkout, g1 and g2:\n%s", wts)
	}

	// The app stops; the worker's window on the host closes meanwhile; the app starts again.
	w.app.Stop(syscall.SIGTERM, 10*time.Second)
	if out, err := w.hostTmux("kill-window", "-t", "build:2").CombinedOutput(); err != nil {
		t.Fatalf("tmux kill-window on the host: %v: %s", err, out)
	}
	w.start()
	// The checkout is gone from git's list a moment before the app hears the host's answer and
	// logs the retire: both are waited for.
	const retired = `msg="group retired" environment=build group=g1`
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		wts = git("worktree", "list", "--porcelain")
		if !strings.Contains(wts, "/g1\n") && strings.Contains(w.app.Log.String(), retired) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("g1 was not retired within 60 s of the restart:\n%s\nthe log:\n%s", wts, w.app.Log)
		}
	}
	if !strings.Contains(wts, "/g2\n") {
		t.Errorf("g2, which no terminal joined, is gone:\n%s", wts)
	}
	if got := git("show", "refs/krad/snapshots/g1:notes.txt"); got != "work" {
		t.Errorf("g1's snapshot on the host holds notes.txt as %q, want the worker's work", got)
	}
}

// krad mcp on an SSH host, through krad-ade itself: the lead there runs the static krad's krad
// mcp as an agent's CLI would, and talks MCP to it on its stdin and stdout (initialize, then
// tools/list and a call of list_agents); the static krad links no MCP server, and krad-ade
// serves it through the host's forward. The lead's tools come back, and the call lists build's
// terminals; when its input ends, krad mcp exits 0. The lead ends its input once both answers
// came: the server answers calls concurrently, in either order, and drops those still running
// when its input ends, as an agent's CLI that leaves would want (CI once saw the call's answer
// first, and the list's lost). One krad mcp is one session of the app's.
func TestKradMCPOnAnSSHHost(t *testing.T) {
	w := newSSHWorld(t, "")
	w.write(filepath.Join(w.home, ".ssh", "known_hosts"), w.sshd.KnownHostsLine(0)+"\n")
	w.write(filepath.Join(w.home, "krad-ade", "config.toml"), `[[environment]]
name = "build"
ssh = "buildbox"
dir = "~"

[[terminal]]
environment = "build"
title = "lead"
lead = true
command = '''
{ printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_agents","arguments":{"all":true}}}'
  until grep -q '"id":2' ~/mcp.out 2>/dev/null && grep -q '"id":3' ~/mcp.out; do sleep 0.1; done; } | krad mcp > ~/mcp.out 2> ~/mcp.err
echo $? > ~/mcp.exit
sleep 300'''
`)
	w.start()
	exit := filepath.Join(w.sshd.Home, "mcp.exit")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(exit); err == nil && strings.HasSuffix(string(b), "\n") {
			break
		}
		if time.Now().After(deadline) {
			errOut, _ := os.ReadFile(filepath.Join(w.sshd.Home, "mcp.err"))
			t.Fatalf("krad mcp on the host did not finish within 60 s; its stderr %q; the log:\n%s", errOut, w.app.Log)
		}
	}
	out, _ := os.ReadFile(filepath.Join(w.sshd.Home, "mcp.out"))
	code, _ := os.ReadFile(exit)
	errOut, _ := os.ReadFile(filepath.Join(w.sshd.Home, "mcp.err"))
	if strings.TrimSpace(string(code)) != "0" || len(errOut) != 0 {
		t.Errorf("krad mcp on the host exited %q, stderr %q; want 0 and nothing", code, errOut)
	}
	replies := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Result == nil {
			t.Fatalf("krad mcp printed %q, not a reply: %v", line, err)
		}
		replies[r.ID] = string(r.Result)
	}
	for _, want := range []string{`"name":"spawn_worker"`, `"name":"wait_for_agent"`} {
		if !strings.Contains(replies[2], want) {
			t.Errorf("tools/list on the host: %s; want %s; krad mcp printed:\n%s", replies[2], want, out)
		}
	}
	if !strings.Contains(replies[3], `build:1`) || strings.Contains(replies[3], `"isError":true`) {
		t.Errorf("list_agents on the host: %s; want build:1 listed", replies[3])
	}
	if n := strings.Count(w.app.Log.String(), `msg="krad mcp session opened" terminal=build:1 origin="the forward of SSH environment build"`); n != 1 {
		t.Errorf("the app's log says it opened %d sessions through build's forward for one krad mcp on the host, want 1:\n%s", n, w.app.Log)
	}
}
