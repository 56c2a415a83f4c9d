package forward

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/forward/knownhosts"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// A host whose key is unknown fails; once the person trusts the key in known_hosts, the
// connection is made, with no restart and no other nudge.
func TestFailedHealsWhenKnownHostsChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}})
	e.writeConfig(hostBlock("build", s))
	r := run(t, e.cfg("build"))
	failed, i := r.wait(20*time.Second, 0, func(s Status) bool { return s.State == Failed })
	var hk *knownhosts.HostKeyError
	if !errors.As(failed.Err, &hk) || !hk.Unknown() {
		t.Fatalf("failed with %v, want an unknown host key", failed.Err)
	}

	e.trust(s.KnownHostsLine(0))
	st, _ := r.connected(i + 1)
	carries(t, st.Addr)
}

// The same for a fix in ssh_config: here the host block named a known_hosts file that does not
// hold the key, and the person removes that line.
func TestFailedHealsWhenSSHConfigChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.startBuild()
	e.writeConfig(hostBlock("build", s, "UserKnownHostsFile "+filepath.Join(e.home, "elsewhere")))
	r := run(t, e.cfg("build"))
	_, i := r.wait(20*time.Second, 0, func(s Status) bool { return s.State == Failed })

	e.writeConfig(hostBlock("build", s))
	st, _ := r.connected(i + 1)
	carries(t, st.Addr)
}

// A failure fixed where no watched file shows it (here: on the host, as OnConnect sees it) is
// tried again when Retry says so, and only then.
func TestRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startBuild()
	var broken atomic.Bool
	broken.Store(true)
	var calls atomic.Int32
	cfg := e.cfg("build")
	cfg.OnConnect = func(context.Context, *ssh.Client, Forward, *Shell) error {
		calls.Add(1)
		if broken.Load() {
			return Permanent(errors.New("tmux is not installed on the host"))
		}
		return nil
	}
	r := run(t, cfg)
	_, i := r.wait(20*time.Second, 0, func(s Status) bool { return s.State == Failed })
	time.Sleep(3 * filePoll) // the files are looked at, and have not changed
	if n := calls.Load(); n != 1 {
		t.Errorf("%d attempts before Retry, want 1; statuses: %v", n, r.history())
	}

	broken.Store(false)
	r.c.Retry()
	st, _ := r.connected(i + 1)
	carries(t, st.Addr)
}

// Retry ends the wait of a connection that is retrying, however long its backoff.
func TestRetryEndsTheBackoff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startBuild()
	var calls atomic.Int32
	cfg := e.cfg("build")
	cfg.MinBackoff = time.Hour
	cfg.OnConnect = func(context.Context, *ssh.Client, Forward, *Shell) error {
		if calls.Add(1) == 1 {
			return errors.New("the host is busy")
		}
		return nil
	}
	r := run(t, cfg)
	_, i := r.wait(20*time.Second, 0, func(s Status) bool { return s.State == Retrying })
	r.c.Retry()
	st, _ := r.connected(i + 1)
	carries(t, st.Addr)
}

// watched tells a change of content, a file that appears or goes, and not a rewrite with the
// same content; a FIFO among the files does not block it.
func TestWatched(t *testing.T) {
	dir := t.TempDir()
	file, fifo := filepath.Join(dir, "known_hosts"), filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var w watched
	w.add(file, fifo, "/dev/null", file)
	if len(w) != 3 {
		t.Fatalf("watched %d files, want 3", len(w))
	}
	step := func(what, data string, want bool) {
		t.Helper()
		if data != "-" {
			if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		} else {
			os.Remove(file)
		}
		path, changed := w.changed()
		if changed != want || (changed && path != file) {
			t.Errorf("%s: changed() = %q, %v; want %v", what, path, changed, want)
		}
		w = nil
		w.add(file, fifo, "/dev/null")
	}
	step("created", "a", true)
	step("rewritten the same", "a", false)
	step("changed", "b", true)
	step("removed", "-", true)
}
