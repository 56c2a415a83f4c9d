package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/internal/apptest"
	"github.com/krad-ade/krad/internal/testbin"
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
