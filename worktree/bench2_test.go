package worktree

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// The benchmarks of issues 11 and 12, on the same repository as bench_test.go's: Changes on an
// SSH host, a squash pick of a variant, and a variant set of 8 made. Run with, for example:
//
//	go test -run '^$' -bench 'ChangesSSH/(stat|patch)/paired|PickSquash/paired|CreateSet8/paired' -benchtime 3x -count 3 ./worktree

// BenchmarkChangesSSH is BenchmarkChanges as the app asks for it of an SSH host: the static
// krad's hidden verb, `krad-ade-agents worktree`, run over ssh on a loopback sshd (the Op as
// JSON on stdin, the Result as JSON on stdout), against the same git commands run over ssh by
// hand, as one command line for the host's shell. Both go through one OpenSSH client
// connection that stays open (ControlMaster), as the app keeps its connection to a host open
// and runs each operation as one exec on it: what is compared is the work on the host, not the
// SSH handshake. The host is this computer, the repository the shared one.
func BenchmarkChangesSSH(b *testing.B) {
	r := benchRepo(b)
	s := &benchState
	testbin.Need(b, "ssh", "openssh-client")
	srv := sshdtest.Start(b, sshdtest.Options{})

	// The static krad, installed on the host as the app installs it: as krad-ade-agents.
	bin := filepath.Join(srv.Home, ".krad-ade", "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		b.Fatal(err)
	}
	static, err := os.ReadFile(filepath.Join(testbin.Dir(b), "krad-linux-"+runtime.GOARCH))
	if err != nil {
		b.Fatal(err)
	}
	agents := filepath.Join(bin, "krad-ade-agents")
	if err := os.WriteFile(agents, static, 0o700); err != nil {
		b.Fatal(err)
	}

	// One connection for every command of the run; a short folder, as a socket's path is
	// limited to about 100 bytes.
	cm, err := os.MkdirTemp("", "kcm")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(cm)
	config := srv.WriteSSHConfig(b, "host", "ControlMaster auto", "ControlPath "+filepath.Join(cm, "%C"), "ControlPersist 600")
	if out, err := exec.Command("ssh", "-F", config, "-M", "-N", "-f", "host").CombinedOutput(); err != nil {
		b.Fatalf("start the ssh connection: %v: %s", err, out)
	}
	defer exec.Command("ssh", "-F", config, "-O", "exit", "host").Run()
	overSSH := func(b *testing.B, command string, stdin []byte) []byte {
		cmd := exec.Command("ssh", "-F", config, "host", command)
		cmd.Stdin = bytes.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("ssh host %s: %v: %s", command, err, stderr.Bytes())
		}
		return out
	}

	base := s.group.BaseCommit
	want := benchEdited + benchUntracked
	byHandChanges := func(b *testing.B, patch bool) {
		// As a person would type it: a temporary index, the group's copied with its time, git add
		// -A into it, the list with its counts, and the patch; the copy removed whatever failed.
		line := fmt.Sprintf(`cd %s && t=$(mktemp) && cp -p %s "$t" && export GIT_INDEX_FILE="$t" && git add -A && git diff --cached -M --numstat -z %s`,
			shell.Quote(s.group.Dir), shell.Quote(s.index), base)
		if patch {
			line += " && git diff --cached -M " + base
		}
		line += `; s=$?; rm -f "$t"; exit $s`
		out := overSSH(b, line, nil)
		// The list's records end in NUL, and the patch (of text files) has none.
		if n := bytes.Count(out, []byte{0}); n != want {
			b.Fatalf("%d files listed, want %d", n, want)
		}
		if patch {
			// The first file's patch follows the list's last NUL, the others a newline.
			if n := bytes.Count(out, []byte("\x00diff --git ")) + bytes.Count(out, []byte("\ndiff --git ")); n != want {
				b.Fatalf("%d files' patches, want %d", n, want)
			}
		}
	}
	krad := func(b *testing.B, patch bool) {
		op, _ := json.Marshal(Op{Op: OpChanges, Dir: r.Top, Root: s.root, Group: benchGroup, Changes: &ChangesOptions{Stat: !patch}})
		out := overSSH(b, "exec "+shell.Quote(agents)+" worktree", op)
		var res Result
		if err := json.Unmarshal(out, &res); err != nil {
			b.Fatalf("the result of krad-ade-agents worktree: %v: %.200q", err, out)
		}
		if err := res.Err(); err != nil {
			b.Fatal(err)
		}
		if n := len(res.Changes.Files); n != want {
			b.Fatalf("%d files changed, want %d", n, want)
		}
		if patch {
			for _, f := range res.Changes.Files {
				if f.LeftOut != "" {
					b.Fatalf("%s left out of the patch: %s", f.Path, f.LeftOut)
				}
			}
			if n := strings.Count("\n"+res.Changes.Patch, "\ndiff --git "); n != want {
				b.Fatalf("%d files' patches, want %d", n, want)
			}
		}
	}
	// One of each first, untimed: the blobs' first reads, and the static krad's.
	byHandChanges(b, true)
	krad(b, true)
	for _, mode := range []string{"stat", "patch"} {
		patch := mode == "patch"
		b.Run(mode+"/paired", func(b *testing.B) {
			paired(b, func(b *testing.B) { byHandChanges(b, patch) }, func(b *testing.B) { krad(b, patch) }, nil)
		})
	}
}

// BenchmarkPickSquash is a squash pick of a variant whose branch holds the 1,000-file change
// (worktree.Do with an OpPick, How squash, as the app runs PickVariant), against
// `git merge --squash BRANCH` and `git commit` run by hand in the main checkout, from the same
// state: main at the base, a branch at the variant's commit. Each pair has a set of its own
// (OpCreateSet of 1, its checkout then reset to the change's commit, as an agent that committed
// its work leaves it) and a branch of its own for the baseline, made untimed; the main checkout
// is put back at the base after each op, untimed. Each op checks that main's new commit has the
// variant's tree, and its parent the base.
func BenchmarkPickSquash(b *testing.B) {
	r := benchRepo(b)
	s := &benchState
	ctx := context.Background()
	top := r.Top
	mustGit := func(b *testing.B, dir string, env []string, args ...string) string {
		out, err := byHand(dir, env, nil, args...)
		if err != nil {
			b.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	// The commits pick makes need an identity; the repository's own, as a person's would be.
	mustGit(b, top, nil, "config", "user.name", "T")
	mustGit(b, top, nil, "config", "user.email", "t@example.com")
	base := mustGit(b, top, nil, "rev-parse", "HEAD")

	// The change as one commit on the base: the bench group's work (1,000 files edited, 10
	// new), through a temporary index so that the group's own is left as Changes reads it.
	tmp, err := os.CreateTemp("", "krad-bench-index-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(tmp.Name())
	if _, _, _, err := copyFile(tmp, s.index); err != nil {
		b.Fatal(err)
	}
	tmp.Close()
	env := []string{"GIT_INDEX_FILE=" + tmp.Name()}
	mustGit(b, s.group.Dir, env, "add", "-A")
	tree := mustGit(b, s.group.Dir, env, "write-tree")
	work := mustGit(b, top, nil, "commit-tree", "-p", base, "-m", "The variant's work", tree)

	// checkMain checks main's new commit and puts the main checkout back at the base.
	checkMain := func(b *testing.B) {
		if got := mustGit(b, top, nil, "rev-parse", "HEAD^{tree}", "HEAD^"); got != tree+"\n"+base {
			b.Fatalf("main's tree and parent after the pick: %q, want %s and %s", got, tree, base)
		}
		mustGit(b, top, nil, "reset", "-q", "--hard", base)
	}
	var set Set
	var hand string
	prepare := func() {
		res := Do(ctx, Op{Op: OpCreateSet, Dir: top, Root: s.root, Hint: nextName("pick"), Set: &SetOptions{Count: 1, Lead: "main:1"}})
		if err := res.Err(); err != nil {
			b.Fatal(err)
		}
		set = *res.Set
		mustGit(b, set.Groups[0].Dir, nil, "reset", "-q", "--hard", work)
		hand = nextName("hand-pick")
		mustGit(b, top, nil, "branch", "--", hand, work)
		syscall.Sync()
	}
	baseline := func(b *testing.B) time.Duration {
		t0 := time.Now()
		mustGit(b, top, nil, "merge", "-q", "--squash", hand)
		mustGit(b, top, nil, "commit", "-q", "-m", "The variant's work")
		d := time.Since(t0)
		checkMain(b)
		return d
	}
	krad := func(b *testing.B) time.Duration {
		t0 := time.Now()
		res := Do(ctx, Op{Op: OpPick, Dir: top, Pick: &PickOptions{Group: set.Groups[0].Name, How: api.PickSquash}})
		d := time.Since(t0)
		if err := res.Err(); err != nil {
			b.Fatal(err)
		}
		if res.Picked.Branch != "main" || res.Picked.Commit == "" {
			b.Fatalf("picked %+v, want a commit on main", res.Picked)
		}
		checkMain(b)
		return d
	}
	after := func() {
		removeGroup(b, top, set.Groups[0].Dir, set.Groups[0].Branch)
		mustGit(b, top, nil, "branch", "-q", "-D", "--", hand)
		prepare()
	}
	b.Run("paired", func(b *testing.B) {
		prepare()
		pairedTimes(b, baseline, krad, after)
		removeGroup(b, top, set.Groups[0].Dir, set.Groups[0].Branch)
		mustGit(b, top, nil, "branch", "-q", "-D", "--", hand)
	})
}

// BenchmarkCreateSet8 is a variant set of 8 made (worktree.Do with an OpCreateSet of 8: the git
// part of RunVariants, without the 8 workers it then spawns in tmux) against 8
// `git worktree add --lock -b` run by hand one after another. One op is all 8.
func BenchmarkCreateSet8(b *testing.B) {
	const n = 8
	r := benchRepo(b)
	s := &benchState
	ctx := context.Background()
	oneAfterAnother := func(b *testing.B) func() {
		var dirs, names []string
		for range n {
			name := nextName("hand-set")
			dir := filepath.Join(s.root, r.Key, name)
			if _, err := byHand(r.Top, nil, nil, "worktree", "add", "-q", "--lock", "-b", BranchPrefix+name, "--", dir, "HEAD"); err != nil {
				b.Fatal(err)
			}
			dirs, names = append(dirs, dir), append(names, name)
		}
		return func() {
			for i := range dirs {
				removeGroup(b, r.Top, dirs[i], BranchPrefix+names[i])
			}
		}
	}
	set := func(b *testing.B) func() {
		res := Do(ctx, Op{Op: OpCreateSet, Dir: r.Top, Root: s.root, Hint: nextName("set"), Set: &SetOptions{Count: n, Lead: "main:1"}})
		if err := res.Err(); err != nil {
			b.Fatal(err)
		}
		if len(res.Set.Groups) != n {
			b.Fatalf("a set of %d groups, want %d", len(res.Set.Groups), n)
		}
		for _, g := range res.Set.Groups {
			if !g.Locked || g.BaseCommit != res.Set.BaseCommit {
				b.Fatalf("variant %+v, want it locked, from %s", g, res.Set.BaseCommit)
			}
		}
		return func() {
			for _, g := range res.Set.Groups {
				removeGroup(b, r.Top, g.Dir, g.Branch)
			}
		}
	}
	b.Run("paired", func(b *testing.B) { pairedMakes(b, oneAfterAnother, set) })
}
