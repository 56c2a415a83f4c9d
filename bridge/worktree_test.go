package bridge_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/bridge"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/worktree"
)

// hostRepo makes a git repository at ~/src on the host with one commit, holding proj/readme.
func hostRepo(t *testing.T, home string) string {
	t.Helper()
	testbin.Need(t, "git", "git")
	repo := filepath.Join(home, "src")
	if err := os.MkdirAll(filepath.Join(repo, "proj"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "proj", "readme"), []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

// worktreeOp runs op through the bridge, within the requests' 1 minute.
func (w *world) worktreeOp(op worktree.Op) worktree.Result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := w.bridge.Worktree(ctx, op)
	if err != nil {
		w.t.Fatalf("%s: %v", op.Op, err)
	}
	return res
}

// TestGroupsOnTheHost: groups of an SSH environment are made, read, listed and retired on the
// host, in the repository that holds the environment's folder (~/src/proj), with their
// checkouts in ~/.krad-ade/worktrees (owner-only): through the static krad installed there, with
// the host's ~/.bashrc printing before each answer. A file whose name is not UTF-8 comes back
// exact, the patch applies, a patch over 1 MiB (the limit of the host's other commands) comes
// back whole, and the operation's own errors come back as they were.
func TestGroupsOnTheHost(t *testing.T) {
	t.Parallel()
	var repo string
	w := startWorld(t, worldOptions{dir: "~/src/proj", host: func(w *world) { repo = hostRepo(t, w.sshd.Home) }})
	// Noise from the host's shell, on the verb's stdout before its answer, with no newline.
	w.writeBashrc(`case "$BASH_EXECUTION_STRING" in *worktree*) printf 'Welcome {friend} ';; esac` + "\n")
	root := filepath.Join(w.sshd.Home, ".krad-ade", "worktrees")
	if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the worktrees root: %v, %v; want a folder, 0700", fi, err)
	}

	res := w.worktreeOp(worktree.Op{Op: worktree.OpCreate, Env: "build", Create: &worktree.CreateOptions{Name: "fix-1"}})
	if res.Error != nil || res.Group == nil {
		t.Fatalf("create: %+v", res)
	}
	g := *res.Group
	// The environment the app names goes over the wire, into the group's record on the host.
	if filepath.Dir(filepath.Dir(g.Dir)) != root || g.Branch != "krad/fix-1" || !g.Locked || g.Env != "build" {
		t.Errorf("create: got %+v, want a locked checkout in %s on krad/fix-1, of environment build", g, root)
	}

	odd := "caf\xe9 \x01.txt" // Latin-1, and a control character
	big := bytes.Repeat([]byte("\xff a line that is not UTF-8, of a file of 3 MiB\n"), 3<<20/48)
	for name, data := range map[string][]byte{
		"proj/readme":   []byte("one\nTWO\nthree\n"),
		"proj/new.txt":  []byte("new\n"),
		"proj/" + odd:   []byte("odd\n"),
		"proj/big.text": big,
	} {
		if err := os.WriteFile(filepath.Join(g.Dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	res = w.worktreeOp(worktree.Op{Op: worktree.OpChanges, Group: "fix-1", Changes: &worktree.ChangesOptions{MaxPatch: api.MaxPatch, MaxFilePatch: api.MaxPatch}})
	if res.Error != nil || res.Changes == nil {
		t.Fatalf("changes: %+v", res)
	}
	c := res.Changes
	paths := map[string]worktree.File{}
	for _, f := range c.Files {
		paths[f.Path] = f
	}
	for _, p := range []string{"proj/readme", "proj/new.txt", "proj/" + odd, "proj/big.text"} {
		if f, ok := paths[p]; !ok || f.LeftOut != "" {
			t.Errorf("changes: %q is %+v (listed %v), want it listed, its patch in", p, f, ok)
		}
	}
	if len(c.Patch) < len(big) || !strings.Contains(c.Patch, "+++ b/proj/"+odd) && !strings.Contains(c.Patch, `"b/proj/caf\351 \001.txt"`) {
		t.Errorf("changes: a patch of %d bytes, want the big file's %d and the odd name", len(c.Patch), len(big))
	}
	if c.Base != g.BaseCommit {
		t.Errorf("changes: base %s, want the group's %s", c.Base, g.BaseCommit)
	}
	apply := exec.Command("git", "-C", repo, "apply", "--check")
	apply.Stdin = strings.NewReader(c.Patch)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Errorf("git apply --check of the patch in the main checkout: %v\n%s", err, out)
	}

	res = w.worktreeOp(worktree.Op{Op: worktree.OpGroups})
	if res.Error != nil || res.List == nil || res.List.Top != repo || len(res.List.Groups) != 1 || res.List.Groups[0].Name != "fix-1" {
		t.Fatalf("groups: %+v, want fix-1 in %s", res, repo)
	}

	res = w.worktreeOp(worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: "fix-1"}})
	if res.Error == nil || res.Error.Code != api.CodeConflict || !strings.Contains(res.Error.Message, "fix-1") {
		t.Errorf("create again: %+v, want a conflict naming fix-1", res)
	}

	res = w.worktreeOp(worktree.Op{Op: worktree.OpRetire, Group: "fix-1"})
	if res.Error != nil || res.Retired == nil || !res.Retired.Removed || res.Retired.Snapshot != worktree.SnapshotPrefix+"fix-1" {
		t.Fatalf("retire: %+v, want the checkout removed, its work kept as a snapshot", res)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Errorf("the checkout is still there after Retire: %v", err)
	}
	show := exec.Command("git", "-C", repo, "show", "--format=", "--name-only", res.Retired.SnapshotCommit)
	if out, err := show.Output(); err != nil || !strings.Contains(string(out), "proj/new.txt") {
		t.Errorf("the snapshot %s: %v, %q; want it to hold proj/new.txt", res.Retired.SnapshotCommit, err, out)
	}
	res = w.worktreeOp(worktree.Op{Op: worktree.OpGroups})
	if res.List == nil || len(res.List.Groups) != 0 || len(res.List.Kept) != 1 || res.List.Kept[0].Snapshot == "" {
		t.Errorf("groups after retire: %+v, want none, and fix-1's snapshot kept", res)
	}
}

// TestGroupOnTheHostCancelled: when the request's deadline ends while Create runs git on the
// host, the answer comes at once, and the host stops git and undoes the group: as the session
// closes, since sshd (run as root here) does not pass on the SIGTERM the bridge asks for.
func TestGroupOnTheHostCancelled(t *testing.T) {
	t.Parallel()
	git := testbin.SlowGit(t)
	w := startWorld(t, worldOptions{dir: "~/src", hostEnv: []string{"PATH=" + git + ":/usr/local/bin:/usr/bin:/bin"},
		host: func(w *world) { hostRepo(t, w.sshd.Home) }})
	repo := filepath.Join(w.sshd.Home, "src")

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(git, "waiting")); err == nil {
				break
			}
		}
		cancel()
	}()
	start := time.Now()
	_, err := w.bridge.Worktree(ctx, worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: "slow"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(git, "waiting")); err != nil {
		t.Fatalf("git worktree add never ran on the host (%v): the test proves nothing", err)
	}
	t.Logf("answered %v after the start", time.Since(start).Round(time.Millisecond))

	for deadline := time.Now().Add(10 * time.Second); len(processesWith(t, git)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("git still runs on the host 10 s after the cancel: pids %v", processesWith(t, git))
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _ := exec.Command("git", "-C", repo, "worktree", "list", "--porcelain").Output()
		branch, _ := exec.Command("git", "-C", repo, "branch", "--list", "krad/slow").Output()
		left, _ := filepath.Glob(filepath.Join(w.sshd.Home, ".krad-ade", "worktrees", "*", "slow"))
		if strings.Count(string(out), "worktree ") == 1 && len(branch) == 0 && len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the cancel the group is left: worktrees %q, branch %q, folders %v", out, branch, left)
		}
	}
}

// processesWith lists the pids of this machine's processes (the host's, in these tests) whose
// command line holds s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []string
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}

// TestGroupsOfAHostNotConnected: a host that is not connected answers at once, unavailable,
// with what the connection is doing.
func TestGroupsOfAHostNotConnected(t *testing.T) {
	t.Parallel()
	e := bridge.New(bridge.Config{Name: "build", Forward: forward.Config{
		Host:   "127.0.0.1:1",
		Target: func(ctx context.Context) (net.Conn, error) { return nil, errors.New("no bus") },
	}})
	start := time.Now()
	_, err := e.Worktree(context.Background(), worktree.Op{Op: worktree.OpGroups})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeUnavailable || ae.Reason != api.ReasonEnvironmentDown ||
		!strings.HasPrefix(ae.Message, "environment build is not connected, so its groups cannot be reached: ") {
		t.Errorf("got %v, want unavailable (environment_down): environment build is not connected…", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("answered after %v, want at once", d)
	}
}
