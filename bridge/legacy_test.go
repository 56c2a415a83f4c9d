package bridge_test

import (
	"encoding/json"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/apptest"
)

// earlierServer is a host's tmux server of an earlier version, on the old socket (tmux -L
// krad-ade in the host's TMUX_TMPDIR): tmux with args, as the host's user.
func earlierServer(w *world, args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-L", app.SocketName}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + w.sshd.Home, "TMUX_TMPDIR=" + w.tmpdir}
	return cmd
}

// startEarlierServer starts the earlier version's server with session build, whose window 1 is
// the lead build:1, titled "old lead".
func startEarlierServer(t *testing.T, w *world) {
	t.Helper()
	meta, _ := json.Marshal(map[string]any{"terminal": 1, "title": "old lead", "role": "lead", "session": "build:1"})
	for _, args := range [][]string{
		{"-f", "/dev/null", "new-session", "-d", "-s", "build", "-x", "200", "-y", "50", "sleep 600"},
		{"set-option", "-w", "-t", "build:0", "@krad", string(meta)},
		{"set-option", "-w", "-t", "build:0", "@krad_terminal", "build:1"},
		{"set-option", "-t", "build", "@krad_next", "2"},
	} {
		if out, err := earlierServer(w, args...).CombinedOutput(); err != nil {
			t.Fatalf("the earlier version's tmux %q: %v: %s", args, err, out)
		}
	}
}

// TestStuckEarlierServerIsKept: the app uses an earlier version's tmux server on the host, which
// then hangs (SIGSTOP). Every attach to it times out; none of those is taken for the server being
// gone, so the app starts no server of its own beside it (which would leave the old server's
// agents for good). Once the old server answers again the app is back on it, with its lead.
func TestStuckEarlierServerIsKept(t *testing.T) {
	t.Parallel()
	var log apptest.Buffer // the app's log, kept for the test to read
	w := startWorld(t, worldOptions{
		host:           func(w *world) { startEarlierServer(t, w) },
		log:            slog.New(slog.NewTextHandler(&log, nil)),
		commandTimeout: 5 * time.Second,
		tmuxTimeout:    2 * time.Second,
	})
	if got := w.clientList()["build:1"]; got.Title != "old lead" {
		t.Fatalf("build:1 is %+v, want the earlier version's lead, adopted", got)
	}
	out, err := earlierServer(w, "display-message", "-p", "#{pid}").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resume := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	t.Cleanup(resume)

	// Two attaches time out in a row, or the app starts a server of its own: whichever comes
	// first.
	timedOut := func() int {
		n := 0
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.Contains(l, `msg="environment down" environment=build`) && strings.Contains(l, "did not finish starting tmux") {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(90 * time.Second); timedOut() < 2; time.Sleep(50 * time.Millisecond) {
		if w.hostTmux("has-session").Run() == nil {
			t.Fatalf("the app started a tmux server of its own while the earlier version's was stopped; its log:\n%s", log.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two attaches timed out within 90 s; the app's log:\n%s", log.String())
		}
	}
	for len(w.events) > 0 {
		<-w.events
	}
	resume()
	w.event(60*time.Second, "environment_up on the earlier version's server", appEvent(api.EnvironmentUp, nil))
	if got := w.clientList()["build:1"]; got.Title != "old lead" || got.State == api.StateClosed {
		t.Errorf("build:1 is %+v, want the earlier version's lead", got)
	}
	if w.hostTmux("has-session").Run() == nil {
		t.Error("the app started a tmux server of its own beside the earlier version's")
	}
	if hint, want := w.bridge.AttachHint("build"), "ssh -t buildbox tmux -L krad-ade attach -t build"; hint != want {
		t.Errorf("the attach hint is %q, want %q", hint, want)
	}
}
