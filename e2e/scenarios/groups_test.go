//go:build e2e

package scenarios_test

import (
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/e2e"
)

// TestGroupsAndVariantsOnTheHost is the groups issue's walk-through typed in a lead's terminal on
// a container host, the repository there: krad worktree create, krad spawn --group (the worker
// starts in the group's checkout with its variables), krad changes --stat and piped into git
// apply --check, krad groups, krad close (the group retires, its work kept on a snapshot ref in
// the host's repository); then a variant set of two, picked as a squash.
func TestGroupsAndVariantsOnTheHost(t *testing.T) {
	s := oneHost(t, 48, singleOptions{dir: "~/app", before: func(h *e2e.Host) {
		h.ExecAs(t, "krad", "sh", "-c", `set -e; mkdir ~/app; cd ~/app; git init -q -b main
git config user.name Pat; git config user.email pat@example.com
printf 'package retry\n' > retry.go; git add .; git commit -q -m first`)
	}})
	lead := s.lead
	lead.waitForShell(t, 30*time.Second)
	base := strings.TrimSpace(s.a.ExecAs(t, "krad", "git", "-C", "/home/krad/app", "rev-parse", "--short=7", "HEAD"))

	out := lead.mustRun(t, "krad worktree create fix-retry")
	if want := "a:fix-retry  krad/fix-retry  from " + base + "  ~/.krad-ade/worktrees/app-"; !strings.HasPrefix(out, want) {
		t.Errorf("krad worktree create printed %q, want it to start %q", out, want)
	}
	if _, rc := lead.run(t, "krad worktree create fix-retry", 30*time.Second); rc != 1 {
		t.Errorf("creating fix-retry again exited %d, want 1 (conflict)", rc)
	}
	lead.mustRun(t, `krad spawn --group fix-retry --title fixer -- sh -c 'echo "G=$KRAD_ADE_GROUP P=$KRAD_ADE_PORT D=$(pwd)"; printf "package retry\n// fixed\n" > retry.go; echo done-writing; sleep 300'`)
	out = lead.mustRun(t, `until krad read 2 | grep -q done-writing; do sleep 0.2; done; krad read 2 | grep G=`)
	if !strings.Contains(out, "G=fix-retry P=20000 D=/home/krad/.krad-ade/worktrees/app-") {
		t.Errorf("the worker's variables: %q", out)
	}
	if out = lead.mustRun(t, "krad changes 2 --stat"); !strings.Contains(out, " retry.go | 1 +") {
		t.Errorf("krad changes --stat printed %q", out)
	}
	lead.mustRun(t, "cd ~/app && krad changes 2 | git apply --check && cd")
	if out = lead.mustRun(t, "krad groups"); !strings.Contains(out, "fix-retry  krad/fix-retry  "+base) {
		t.Errorf("krad groups printed %q", out)
	}
	lead.mustRun(t, "krad close 2")
	snap := strings.TrimSpace(s.a.ExecAs(t, "krad", "git", "-C", "/home/krad/app", "show", "refs/krad/snapshots/fix-retry:retry.go"))
	if snap != "package retry\n// fixed" {
		t.Errorf("the snapshot on the host holds retry.go as %q", snap)
	}
	if left := s.a.ExecAs(t, "krad", "sh", "-c", "ls ~/.krad-ade/worktrees/app-*/ 2>/dev/null | wc -l"); strings.TrimSpace(left) != "0" {
		t.Errorf("%s checkouts left after the close", left)
	}

	// Variants: two scripted workers, each writing a file of its own; the second is picked.
	out = lead.mustRun(t, `krad variants run --title flaky --prompt go --count 2 -- sh -c 'read -r p; echo "$p $KRAD_ADE_GROUP" > "$KRAD_ADE_GROUP.txt"; echo wrote'`)
	if !strings.HasPrefix(out, "set flaky: 2 workers from "+base) {
		t.Errorf("krad variants run printed %q", out)
	}
	lead.mustRun(t, "krad wait 3 4")
	if out = lead.mustRun(t, "krad variants pick flaky-2 --message 'flaky: fixed'"); !strings.Contains(out, "picked flaky-2 (squash → ") {
		t.Errorf("krad variants pick printed %q", out)
	}
	if got := strings.TrimSpace(s.a.ExecAs(t, "krad", "git", "-C", "/home/krad/app", "log", "-1", "--format=%s %an")); got != "flaky: fixed Pat" {
		t.Errorf("the host's main branch ends with %q", got)
	}
	if got := strings.TrimSpace(s.a.ExecAs(t, "krad", "cat", "/home/krad/app/flaky-2.txt")); got != "go flaky-2" {
		t.Errorf("the picked file in the host's checkout holds %q", got)
	}
}
