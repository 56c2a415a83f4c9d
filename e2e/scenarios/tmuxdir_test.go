//go:build e2e

package scenarios_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/e2e"
)

// TestAnotherHostUserTakesTmuxsFolder: before the app first connects, the host's other user
// creates /tmp/tmux-1000, tmux's default socket folder for krad (uid 1000), which makes tmux
// refuse to start there ("unsafe permissions"). The environment comes up all the same: its tmux
// server listens in ~/.krad-ade/tmux, owner-only; the lead's krad works; a person attaches with
// the command the app printed; and the other user's folder is left as it was, with nothing of
// ours in it.
func TestAnotherHostUserTakesTmuxsFolder(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 45, singleOptions{before: func(a *e2e.Host) {
		a.ExecAs(t, "other", "mkdir", "-m", "700", "/tmp/tmux-1000")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := a.Command(ctx, "krad", "tmux", "new-session", "-d", "-s", "probe").CombinedOutput(); err == nil ||
			!strings.Contains(string(out), "unsafe permissions") {
			t.Fatalf("tmux with its default socket as krad: %v: %s; want it refused for unsafe permissions", err, out)
		}
	}})
	a, u, c, lead := s.a, s.u, s.c, s.lead
	if want := "ssh -t a 'tmux -S ~/.krad-ade/tmux/krad-ade attach -t a'"; c.attach != want {
		t.Errorf("the attach hint is %q, want %q", c.attach, want)
	}
	if out := lead.mustRun(t, "krad list"); !strings.Contains(out, "a:1") {
		t.Errorf("krad list in the lead on a:\n%s", out)
	}
	openAttached(t, u, a, "a", 30*time.Second)

	if got := strings.TrimSpace(a.Exec(t, "stat", "-c", "%F %U %a", "/home/krad/.krad-ade/tmux")); got != "directory krad 700" {
		t.Errorf("the app's tmux folder on a: %q, want an owner-only folder of krad's", got)
	}
	if got := strings.TrimSpace(a.Exec(t, "stat", "-c", "%F %U", hostSocket)); got != "socket krad" {
		t.Errorf("the app's tmux socket on a: %q, want krad's socket", got)
	}
	if got := strings.TrimSpace(a.Exec(t, "stat", "-c", "%U %a", "/tmp/tmux-1000")); got != "other 700" {
		t.Errorf("/tmp/tmux-1000 is %q now, want it as the other user left it", got)
	}
	if got := strings.TrimSpace(a.Exec(t, "ls", "-A", "/tmp/tmux-1000")); got != "" {
		t.Errorf("/tmp/tmux-1000 holds %q", got)
	}
}
