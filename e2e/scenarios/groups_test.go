//go:build e2e

package scenarios_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/e2e"
)

// TestGroupsAndVariantsOnTheHost is the groups issue's walk-through typed in a lead's terminal on
// a container host, the repository there: krad worktree create, krad spawn --group (the worker
// starts in the group's checkout with its variables), krad changes --stat and piped into git
// apply --check, krad groups, krad close (the group retires, its work kept on a snapshot ref in
// the host's repository); then a variant set of two, picked as a squash.
func TestGroupsAndVariantsOnTheHost(t *testing.T) {
	t.Parallel()
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
	// The worker's own krad list (its file outside the checkout, so that it is no change) is
	// its group: itself, in fix-retry, and not the lead.
	lead.mustRun(t, `krad spawn --group fix-retry --title fixer -- sh -c 'echo "G=$KRAD_ADE_GROUP P=$KRAD_ADE_PORT D=$(pwd)"; printf "package retry\n// fixed\n" > retry.go; krad list --json >/tmp/worker-list.json; echo "list=$?"; echo done-writing; sleep 300'`)
	out = lead.mustRun(t, `until krad read 2 | grep -q done-writing; do sleep 0.2; done; krad read 2 | grep -e G= -e list=`)
	if !strings.Contains(out, "G=fix-retry P=20000 D=/home/krad/.krad-ade/worktrees/app-") || !strings.Contains(out, "list=0") {
		t.Errorf("the worker's variables and krad list: %q", out)
	}
	listed := s.a.ExecAs(t, "krad", "cat", "/tmp/worker-list.json")
	var agents []api.Agent
	if err := json.Unmarshal([]byte(listed), &agents); err != nil || len(agents) != 1 || agents[0].Terminal != 2 || agents[0].Group != "fix-retry" || !strings.Contains(listed, `"group":"fix-retry"`) {
		t.Errorf("krad list --json in the worker printed %q (%v); want itself alone, in group fix-retry", listed, err)
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

	// Variants: three scripted workers a set, each committing a file of its own and leaving
	// another uncommitted; the second of each set is picked, one set for each way of picking.
	git := func(args ...string) string {
		return strings.TrimSpace(s.a.ExecAs(t, "krad", append([]string{"git", "-C", "/home/krad/app"}, args...)...))
	}
	worktrees := func() int { return strings.Count(git("worktree", "list", "--porcelain"), "worktree ") }
	term := 3
	for _, how := range []string{"squash", "apply", "merge", "branch"} {
		set := "flaky-" + how
		out = lead.mustRun(t, `krad variants run --title `+set+` --prompt go --count 3 -- sh -c 'read -r p; echo "$p $KRAD_ADE_GROUP" > "$KRAD_ADE_GROUP.txt"; git add "$KRAD_ADE_GROUP.txt"; git commit -q -m "$KRAD_ADE_GROUP"; echo "notes of $KRAD_ADE_GROUP" > "$KRAD_ADE_GROUP.notes"; echo wrote'`)
		if !strings.HasPrefix(out, "set "+set+": 3 workers from ") {
			t.Fatalf("krad variants run printed %q", out)
		}
		lead.mustRun(t, fmt.Sprintf("krad wait %d %d %d", term, term+1, term+2))
		winnerTerm := term + 1
		term += 3
		head := git("rev-parse", "HEAD")
		winner := set + "-2"
		pick := "krad variants pick " + winner + " --how " + how + " --message '" + set + ": fixed'"
		var picked struct { // the answer's body, as --json prints it
			How, Commit, Branch, Snapshot string
			Closed                        []string
		}
		if how == "branch" { // its answer names the branch that is the result
			out = lead.mustRun(t, pick+" --json")
			if err := json.Unmarshal([]byte(strings.ReplaceAll(out, "\n", "")), &picked); err != nil {
				t.Errorf("krad variants pick --json printed %q: %v", out, err)
			}
		} else if out = lead.mustRun(t, pick); !strings.Contains(out, "picked "+winner+" ("+how) || !strings.Contains(out, "closed 2 other terminals") {
			t.Errorf("krad variants pick --how %s printed %q", how, out)
		}
		switch how {
		case "squash", "merge":
			if got := git("log", "-1", "--format=%s %an"); got != set+": fixed Pat" {
				t.Errorf("%s: the host's main branch ends with %q", how, got)
			}
			if got := git("show", "HEAD:"+winner+".txt") + "|" + git("show", "HEAD:"+winner+".notes"); got != "go "+winner+"|notes of "+winner {
				t.Errorf("%s: the picked files hold %q", how, got)
			}
			parents := len(strings.Fields(git("rev-list", "--parents", "-n1", "HEAD"))) - 1
			if want := map[string]int{"squash": 1, "merge": 2}[how]; parents != want {
				t.Errorf("%s: the commit has %d parents, want %d", how, parents, want)
			}
		case "apply":
			if got := git("status", "--porcelain"); got != "A  "+winner+".notes\nA  "+winner+".txt" || git("rev-parse", "HEAD") != head {
				t.Errorf("apply: the host's checkout is %q at %s, want the files staged on %s", got, git("rev-parse", "HEAD"), head)
			}
			git("commit", "-q", "-m", "applied")
		case "branch":
			if git("rev-parse", "HEAD") != head || git("status", "--porcelain") != "" {
				t.Error("branch: the host's main checkout was touched")
			}
			// The result is the winner's branch: its commit on the base, and the snapshot of
			// its whole state on top of that.
			branch := "refs/heads/krad/" + winner
			if picked.How != "branch" || picked.Branch != "krad/"+winner || picked.Commit != "" || len(picked.Closed) != 2 {
				t.Errorf("branch: the pick answered %+v, want branch krad/%s, no commit, 2 closed", picked, winner)
			}
			if got := git("log", "-1", "--format=%s %P", branch); got != winner+" "+head {
				t.Errorf("branch: %s is %q, want the winner's commit on %s", branch, got, head)
			}
			if got := git("show", branch+":"+winner+".txt"); got != "go "+winner {
				t.Errorf("branch: %s holds %q", branch, got)
			}
			snap := "refs/krad/snapshots/" + winner
			if got := git("rev-parse", snap); got != picked.Snapshot {
				t.Errorf("branch: %s is %s, the pick answered %s", snap, got, picked.Snapshot)
			}
			if got := git("show", snap+":"+winner+".notes") + "|" + git("rev-parse", snap+"^"); got != "notes of "+winner+"|"+git("rev-parse", branch) {
				t.Errorf("branch: the winner's snapshot holds and follows %q", got)
			}
		}
		// The losers' work is kept on the host, their branches and snapshots, their checkouts
		// gone: the main checkout and the winner's are the worktrees left.
		for _, loser := range []string{set + "-1", set + "-3"} {
			if got := git("show", "refs/heads/krad/"+loser+":"+loser+".txt"); got != "go "+loser {
				t.Errorf("%s: the loser %s's branch holds %q", how, loser, got)
			}
			if got := git("show", "refs/krad/snapshots/"+loser+":"+loser+".notes"); got != "notes of "+loser {
				t.Errorf("%s: the loser %s's snapshot holds %q", how, loser, got)
			}
		}
		if n := worktrees(); n != 2 {
			t.Errorf("%s: %d worktrees after the pick, want the main checkout's and the winner's:\n%s", how, n, git("worktree", "list"))
		}
		// The winner's terminal closed, its group retires too: one worktree, its branch kept.
		lead.mustRun(t, fmt.Sprintf("krad close %d", winnerTerm))
		if n := worktrees(); n != 1 {
			t.Errorf("%s: %d worktrees once the winner closed, want the main checkout's alone:\n%s", how, n, git("worktree", "list"))
		}
		if got := git("show", "refs/heads/krad/"+winner+":"+winner+".txt"); got != "go "+winner {
			t.Errorf("%s: the winner's branch holds %q once it closed", how, got)
		}
	}
}

// TestGroupsOnAHostWithOldGit: a host whose git is older than groups need (a git on its PATH that
// says it is 2.20.0, and fails everything else, as an old git fails the commands groups use):
// krad worktree create, krad spawn --group and krad groups, typed in a lead's terminal there,
// answer unavailable with the version found, the version needed and what to install, on one
// line; nothing is made, and the environment serves on.
func TestGroupsOnAHostWithOldGit(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 52, singleOptions{dir: "~/app", before: func(h *e2e.Host) {
		h.ExecAs(t, "krad", "sh", "-c", `set -e; mkdir ~/app; cd ~/app; git init -q -b main
git config user.name Pat; git config user.email pat@example.com
printf 'package retry\n' > retry.go; git add .; git commit -q -m first`)
		h.WriteFile(t, "/usr/local/bin/git", []byte("#!/bin/sh\n"+
			"for a; do if [ \"$a\" = --version ]; then echo 'git version 2.20.0'; exit 0; fi; done\n"+
			"echo \"error: unknown option '$1'\" >&2; exit 129\n"), 0o755, "root")
	}})
	lead := s.lead
	lead.waitForShell(t, 30*time.Second)
	if got := strings.TrimSpace(lead.mustRun(t, "git --version")); got != "git version 2.20.0" {
		t.Fatalf("the host's git says %q, want the old one", got)
	}
	want := "krad: error: %s: the app answered unavailable: git version 2.20.0 is too old: groups need git 2.36 or later (for `git worktree list --porcelain -z`); " +
		"install git 2.36 or later: Debian 12 and Ubuntu 24.04 have one (apt-get install git), others see https://git-scm.com/downloads\n"
	for _, c := range []struct{ cmd, request string }{
		{"krad worktree create fix-retry", "CreateWorktree"},
		{"krad spawn --group fix-retry -- true", "Spawn"},
		{"krad groups", "Groups"},
	} {
		out, rc := lead.run(t, c.cmd+" >/tmp/old-git.out 2>/tmp/old-git.err", time.Minute)
		stderr := s.a.ExecAs(t, "krad", "cat", "/tmp/old-git.err")
		if rc != 1 || stderr != fmt.Sprintf(want, c.request) {
			t.Errorf("%s exited %d (%s), its stderr %q; want 1 and %q", c.cmd, rc, out, stderr, fmt.Sprintf(want, c.request))
		}
		if got := s.a.ExecAs(t, "krad", "cat", "/tmp/old-git.out"); got != "" {
			t.Errorf("%s printed %q on stdout", c.cmd, got)
		}
	}
	// Nothing made, and the lead alone, served.
	if left := s.a.ExecAs(t, "krad", "sh", "-c", "ls -A ~/.krad-ade/worktrees 2>/dev/null; /usr/bin/git -C ~/app branch --list 'krad/*'"); strings.TrimSpace(left) != "" {
		t.Errorf("left on the host: %q", left)
	}
	if out := lead.mustRun(t, "krad list"); !strings.Contains(out, "\na:1 ") || strings.Contains(out, "a:2") {
		t.Errorf("krad list after the refusals: %q, want the lead alone", out)
	}
}

// TestGroupSetupFailsOnTheHost: config.toml's [[setup]] for the host's repository, as
// docs/groups.md gives it (path from ~/, include, command, timeout), typed at by a lead in its
// terminal there. krad spawn --group makes the group, its checkout gets the ignored file the
// rule includes, and the worker's terminal runs the setup command first: it fails, so the worker
// fails with its exit code and its command never runs. The group is kept: krad groups shows the
// failure and the output's end; a second krad spawn --group is refused (conflict, exit 1) with
// that output; the worker's close leaves the checkout; krad retire removes it.
func TestGroupSetupFailsOnTheHost(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 55, singleOptions{dir: "~/app", before: func(h *e2e.Host) {
		h.ExecAs(t, "krad", "sh", "-c", `set -e; mkdir ~/app; cd ~/app; git init -q -b main
git config user.name Pat; git config user.email pat@example.com
printf '*.local\n' > .gitignore; printf 'package retry\n' > retry.go; git add .; git commit -q -m first
printf 'dev\n' > dev.local`)
	}, config: `[[setup]]
path = "~/app"
include = ["*.local"]
command = "echo \"setting $KRAD_ADE_GROUP up\"; echo 'npm ERR! missing: left-pad'; exit 3"
timeout = "1m"
`})
	lead := s.lead
	lead.waitForShell(t, 30*time.Second)
	// The setup fails at once: spawn may see the worker working (0) or failed already (1).
	if out, rc := lead.run(t, `krad spawn --group bad --title w -- sh -c 'echo SHOULD-NOT-RUN; sleep 300'`, time.Minute); rc != 0 && !(rc == 1 && strings.Contains(out, "a:2 failed as it started")) {
		t.Fatalf("krad spawn --group bad exited %d: %q", rc, out)
	}
	if out, rc := lead.run(t, "krad wait 2", time.Minute); rc != 1 || !strings.Contains(out, "failed") {
		t.Errorf("krad wait 2 exited %d, printing %q; want 1, failed", rc, out)
	}
	screen := lead.mustRun(t, "krad read 2")
	if !strings.Contains(screen, "setting bad up") || !strings.Contains(screen, "npm ERR! missing: left-pad") ||
		!strings.Contains(screen, "setup failed (exited with 3)") || strings.Contains(screen, "SHOULD-NOT-RUN") {
		t.Errorf("the worker's screen:\n%s", screen)
	}
	dir := strings.TrimSpace(s.a.ExecAs(t, "krad", "sh", "-c", "ls -d ~/.krad-ade/worktrees/app-*/bad"))
	if got := s.a.ExecAs(t, "krad", "cat", dir+"/dev.local"); got != "dev\n" {
		t.Errorf("the group's dev.local holds %q, want the main checkout's", got)
	}
	out := lead.mustRun(t, "krad groups")
	if !strings.Contains(out, "(setup failed: exited with 3)") || !strings.Contains(out, "group bad's setup failed (exited with 3, in a:2)") ||
		!strings.Contains(out, "npm ERR! missing: left-pad") {
		t.Errorf("krad groups printed %q", out)
	}
	out, rc := lead.run(t, "krad spawn --group bad -- true", time.Minute)
	if rc != 1 || !strings.Contains(out, "conflict") || !strings.Contains(out, "npm ERR! missing: left-pad") || !strings.Contains(out, "krad retire bad") {
		t.Errorf("a second spawn into the group exited %d, printing %q; want 1, conflict with the setup's output", rc, out)
	}
	if out := lead.mustRun(t, "krad list"); strings.Contains(out, "a:3") {
		t.Errorf("the refused spawn opened a terminal: %q", out)
	}
	lead.mustRun(t, "krad close 2")
	if out := lead.mustRun(t, "krad groups"); !exists(t, s.a, dir) || !strings.Contains(out, "(setup failed: exited with 3)") {
		t.Fatalf("the group whose setup failed was retired when its last terminal closed: krad groups printed %q", out)
	}
	lead.mustRun(t, "krad retire bad")
	if exists(t, s.a, dir) {
		t.Error("krad retire bad left the checkout")
	}
}
