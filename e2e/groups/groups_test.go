//go:build e2e

package groups_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/bridge"
	"github.com/krad-ade/krad/e2e"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/worktree"
)

// connect makes alias (an entry of cfg) an SSH environment whose folder is dir, connects it, and
// returns its bridge once the host is prepared: the static krad installed, ~/.krad-ade made.
func connect(t *testing.T, cfg *e2e.SSHConfig, alias, dir string) *bridge.Environment {
	t.Helper()
	bin := t.TempDir()
	b, err := os.ReadFile(e2e.StaticKrad(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "krad-linux-"+runtime.GOARCH), b, 0o755); err != nil {
		t.Fatal(err)
	}
	tok, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	up := make(chan struct{}, 1)
	e := bridge.New(bridge.Config{
		Name: alias, Dir: dir, Token: tok, Instance: "e2e-groups", BinDir: bin, Version: version.Build,
		Forward: forward.Config{
			Host:         alias,
			Target:       func(context.Context) (net.Conn, error) { return nil, errors.New("no bus in this test") },
			UserConfig:   cfg.Path,
			SystemConfig: forward.None,
			AgentSocket:  forward.None,
			Home:         t.TempDir(),
			OnStatus: func(s forward.Status) {
				if s.State == forward.Connected {
					select {
					case up <- struct{}{}:
					default:
					}
				}
			},
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-up:
	case <-time.After(90 * time.Second):
		t.Fatalf("%s did not connect in 90 s: %s", alias, e.Status())
	}
	return e
}

// op runs a group operation through the bridge within the requests' 1 minute; the way there
// failing fails the test.
func op(t *testing.T, e *bridge.Environment, o worktree.Op) worktree.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := e.Worktree(ctx, o)
	if err != nil {
		t.Fatalf("%s: %v", o.Op, err)
	}
	return res
}

// sh runs script on the host over SSH as its user (OpenSSH's ssh, with cfg), stdin given, and
// returns its stdout.
func sh(t *testing.T, cfg *e2e.SSHConfig, alias, script, stdin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := cfg.Command(ctx, alias, "sh -c "+shell.Quote(script))
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ssh %s %q: %v: %s", alias, script, err, stderr.String())
	}
	return string(out)
}

// TestGroupsOnAnSSHHost: on a Debian host, as its user krad, with the environment's folder in a
// git repository (~/src): a group made through the bridge, a file written in it over SSH, its
// Changes with every file, a name that is not UTF-8 exact and a patch that `git apply --check`
// takes on the host; Groups lists it; Retire removes its checkout and keeps its work as a
// snapshot. Then a Create cut off by its deadline while git runs on the host: git there stops,
// and nothing of the group is left.
func TestGroupsOnAnSSHHost(t *testing.T) {
	t.Parallel()
	lan := e2e.NewNetwork(t, "groups", 46)
	host := e2e.StartHost(t, "a", lan, lan.Addr(10), e2e.HostOptions{})
	cfg := e2e.WriteSSHConfig(t, t.TempDir(), e2e.SSHEntry{Alias: "a", Host: host})
	sh(t, cfg, "a", `set -e; mkdir -p ~/src/proj; cd ~/src; printf 'one\ntwo\n' >proj/readme; git init -q; git add .;
git -c user.name=t -c user.email=t@example.com commit -q -m first`, "")
	e := connect(t, cfg, "a", "~/src/proj")

	res := op(t, e, worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: "fix-1"}})
	if res.Error != nil || res.Group == nil {
		t.Fatalf("create: %+v", res)
	}
	g := *res.Group
	if !strings.HasPrefix(g.Dir, "/home/krad/.krad-ade/worktrees/src-") || g.Branch != "krad/fix-1" || !g.Locked {
		t.Errorf("create: %+v, want a locked checkout under /home/krad/.krad-ade/worktrees on krad/fix-1", g)
	}
	if got := sh(t, cfg, "a", `stat -c %a ~/.krad-ade/worktrees`, ""); got != "700\n" {
		t.Errorf("~/.krad-ade/worktrees has mode %q, want 700", got)
	}

	odd := "proj/caf\xe9.txt" // Latin-1: not UTF-8
	sh(t, cfg, "a", `set -e; cd `+shell.Quote(g.Dir)+`; printf 'one\nTWO\n' >proj/readme; printf 'new\n' >proj/new.txt; printf 'odd\n' >"proj/$(printf 'caf\351').txt"`, "")
	res = op(t, e, worktree.Op{Op: worktree.OpChanges, Group: "fix-1"})
	if res.Error != nil || res.Changes == nil {
		t.Fatalf("changes: %+v", res)
	}
	files := map[string]string{}
	for _, f := range res.Changes.Files {
		files[f.Path] = f.Status
	}
	want := map[string]string{"proj/readme": "M", "proj/new.txt": "A", odd: "A"}
	for p, st := range want {
		if files[p] != st {
			t.Errorf("changes: %q has status %q, want %q (files: %q)", p, files[p], st, files)
		}
	}
	if len(files) != len(want) {
		t.Errorf("changes: files %q, want %q", files, want)
	}
	sh(t, cfg, "a", `cd ~/src && git apply --check`, res.Changes.Patch)

	res = op(t, e, worktree.Op{Op: worktree.OpGroups})
	if res.Error != nil || res.List == nil || res.List.Top != "/home/krad/src" || len(res.List.Groups) != 1 || res.List.Groups[0].Name != "fix-1" {
		t.Fatalf("groups: %+v, want fix-1 of /home/krad/src", res)
	}

	res = op(t, e, worktree.Op{Op: worktree.OpRetire, Group: "fix-1"})
	if res.Error != nil || res.Retired == nil || !res.Retired.Removed || res.Retired.Snapshot != worktree.SnapshotPrefix+"fix-1" {
		t.Fatalf("retire: %+v, want the checkout removed and a snapshot kept", res)
	}
	got := sh(t, cfg, "a", `cd ~/src && git show --format= --name-only refs/krad/snapshots/fix-1 | sort; test -e `+shell.Quote(g.Dir)+` || echo gone`, "")
	if !strings.Contains(got, "proj/new.txt\n") || !strings.Contains(got, "proj/readme\n") || !strings.HasSuffix(got, "gone\n") {
		t.Errorf("the snapshot holds %q, want proj/new.txt and proj/readme, and the checkout gone", got)
	}

	// A git on the host's PATH that hangs in `git worktree add`, for a deadline to cut off.
	host.WriteFile(t, "/usr/local/bin/git", []byte("#!/bin/sh\n"+
		"case \" $* \" in *\" worktree add \"*) : >/tmp/krad-e2e-waiting; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; exit 1;; esac\n"+
		"exec /usr/bin/git \"$@\"\n"), 0o755, "root")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if host.Command(ctx, "root", "test", "-e", "/tmp/krad-e2e-waiting").Run() == nil {
				break
			}
		}
		cancel()
	}()
	start := time.Now()
	_, err := e.Worktree(ctx, worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: "slow"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a Create cut off: got %v, want context.Canceled", err)
	}
	t.Logf("measured: a Create cut off answered %v after it started", time.Since(start).Round(time.Millisecond))
	if host.Command(context.Background(), "root", "test", "-e", "/tmp/krad-e2e-waiting").Run() != nil {
		t.Fatal("git worktree add never ran on the host: the test proves nothing")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left := sh(t, cfg, "a", `pgrep -u krad -f '[w]orktree add' || true; cd ~/src && git branch --list krad/slow; ls ~/.krad-ade/worktrees/*/ | grep -x slow || true`, "")
		if left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the cancel the host still has: %q", left)
		}
	}
}

// TestHostWithoutGit: a host without git answers every group operation with worktree's error,
// whole, saying what to install; the environment itself is connected.
func TestHostWithoutGit(t *testing.T) {
	t.Parallel()
	lan := e2e.NewNetwork(t, "nogit", 47)
	host := e2e.StartHost(t, "nogit", lan, lan.Addr(10), e2e.HostOptions{WithoutGit: true})
	cfg := e2e.WriteSSHConfig(t, t.TempDir(), e2e.SSHEntry{Alias: "nogit", Host: host})
	e := connect(t, cfg, "nogit", "")
	res := op(t, e, worktree.Op{Op: worktree.OpGroups})
	want := "git is missing or too old: git not found on PATH: install it (Debian: apt-get install git)"
	if res.Error == nil || res.Error.Code != api.CodeUnavailable || res.Error.Message != want {
		t.Errorf("got %+v, want unavailable: %s", res, want)
	}
}

// TestIncludedFilesOnAnSSHHost: on a Debian host, a new group's checkout gets the ignored files
// that the host repository's .worktreeinclude and the config's rule (sent with the operation)
// name, copied there by the static krad: .env and a *.local file. A symlink among them, to a
// file out of the repository, is not copied and is named; ../../secret and an absolute path
// copy nothing. Past the cap on files, the rest is left out, and the answer says how many.
func TestIncludedFilesOnAnSSHHost(t *testing.T) {
	t.Parallel()
	lan := e2e.NewNetwork(t, "include", 53)
	host := e2e.StartHost(t, "inc", lan, lan.Addr(10), e2e.HostOptions{})
	cfg := e2e.WriteSSHConfig(t, t.TempDir(), e2e.SSHEntry{Alias: "inc", Host: host})
	sh(t, cfg, "inc", `set -e; mkdir -p ~/src/proj; cd ~/src; printf 'one\n' >proj/readme
printf '.env\n*.local\nlink.env\nmany/\n' >.gitignore; git init -q; git add .
git -c user.name=t -c user.email=t@example.com commit -q -m first
printf 'TOKEN=1\n' >.env; printf 'dev\n' >proj/dev.local; printf 'secret\n' >~/secret; ln -s ~/secret link.env
printf '.env\nlink.env\n../../secret\n/home/krad/secret\n/etc/passwd\n' >.worktreeinclude`, "")
	e := connect(t, cfg, "inc", "~/src/proj")
	rules := []worktree.SetupRule{{Path: "~/src", Include: []string{"*.local"}}}

	res := op(t, e, worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: "inc"}, Setups: rules})
	if res.Error != nil || res.Group == nil {
		t.Fatalf("create: %+v", res)
	}
	g := res.Group
	got := sh(t, cfg, "inc", `cd `+shell.Quote(g.Dir)+` && cat .env proj/dev.local && find . -path ./.git -prune -o \( -type f -o -type l \) -print | sort`, "")
	if want := "TOKEN=1\ndev\n./.env\n./.gitignore\n./proj/dev.local\n./proj/readme\n"; got != want {
		t.Errorf("the host's checkout holds %q, want %q: .env and proj/dev.local copied, nothing else", got, want)
	}
	if in := g.Included; in == nil || in.Files != 2 || in.Bytes != 12 || len(in.Skipped) != 1 || in.Skipped[0] != "link.env (a symlink)" || in.Cut != "" {
		t.Errorf("Included = %+v, want 2 files of 12 bytes and link.env skipped as a symlink", in)
	}

	// 1,001 files more: the cap of 1,000 copies 1,000 of the 1,004, and says so.
	sh(t, cfg, "inc", `set -e; cd ~/src; mkdir many; i=0; while [ $i -lt 1001 ]; do : >many/$i.dat; i=$((i+1)); done
printf 'many/\n' >>.worktreeinclude`, "")
	res = op(t, e, worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: "cut"}, Setups: rules})
	if res.Error != nil || res.Group == nil {
		t.Fatalf("create with 1,004 files to include: %+v", res)
	}
	in := res.Group.Included
	if in == nil || in.Files != 1000 || !strings.Contains(in.Cut, "3 of the 1004 files to include were left out: at most 1000 files") {
		t.Errorf("Included = %+v, want 1000 files and the cut said", in)
	}
	if n := sh(t, cfg, "inc", `find `+shell.Quote(res.Group.Dir)+`/many -type f | wc -l`, ""); strings.TrimSpace(n) != "999" {
		t.Errorf("the cut checkout holds %s files of many/, want 999 (1000 less .env before them; link.env is skipped)", strings.TrimSpace(n))
	}
}

// TestSyncOnAnSSHHost: on a Debian host, a group's branch is synced onto the main checkout's
// HEAD by the static krad there: rebased, its commit replayed on top; then a sync whose merge
// conflicts is conflict, names the file and the command that resolves it, and changes nothing
// of the group: its branch, its index, its files.
func TestSyncOnAnSSHHost(t *testing.T) {
	t.Parallel()
	lan := e2e.NewNetwork(t, "sync", 54)
	host := e2e.StartHost(t, "sync", lan, lan.Addr(10), e2e.HostOptions{})
	cfg := e2e.WriteSSHConfig(t, t.TempDir(), e2e.SSHEntry{Alias: "sync", Host: host})
	sh(t, cfg, "sync", `set -e; mkdir -p ~/src/proj; cd ~/src; printf 'one\ntwo\n' >proj/readme; git init -q -b main
git config user.name 'Host Person'; git config user.email hp@example.com; git add .; git commit -q -m first`, "")
	e := connect(t, cfg, "sync", "~/src/proj")
	res := op(t, e, worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: "s"}})
	if res.Error != nil || res.Group == nil {
		t.Fatalf("create: %+v", res)
	}
	dir := shell.Quote(res.Group.Dir)
	sh(t, cfg, "sync", `set -e; cd `+dir+`; printf 'one\nTWO\n' >proj/readme; git commit -q -am "the worker's"
cd ~/src; printf 'other\n' >proj/other; git add .; git commit -q -m 'main moves on'`, "")
	res = op(t, e, worktree.Op{Op: worktree.OpSync, Sync: &worktree.SyncOptions{Group: "s", How: worktree.SyncRebase}})
	onto := strings.TrimSpace(sh(t, cfg, "sync", `git -C ~/src rev-parse main`, ""))
	if res.Error != nil || res.Synced == nil || res.Synced.Onto != onto || res.Synced.Commits != 1 {
		t.Fatalf("sync: %+v, want a rebase of 1 commit onto %s", res, onto)
	}
	if got := sh(t, cfg, "sync", `cd `+dir+` && git log --format='%s|%an' main..krad/s && git rev-parse krad/s^ && cat proj/other && git status --porcelain`, ""); got != "the worker's|Host Person\n"+onto+"\nother\n" {
		t.Errorf("the group after the rebase: %q", got)
	}

	// Both change the readme's second line: a conflict, and nothing of the group changes.
	state := `cd ` + dir + ` && git rev-parse krad/s && git ls-files -s && git status --porcelain=v1 && cat proj/readme && git -C ~/src rev-parse krad/s`
	sh(t, cfg, "sync", `set -e; cd ~/src; printf 'one\nzwei\n' >proj/readme; git commit -q -am "main's readme"`, "")
	before := sh(t, cfg, "sync", state, "")
	res = op(t, e, worktree.Op{Op: worktree.OpSync, Sync: &worktree.SyncOptions{Group: "s"}})
	if res.Error == nil || res.Error.Code != api.CodeConflict || !strings.Contains(res.Error.Message, "proj/readme") {
		t.Fatalf("sync with a conflict: %+v, want conflict naming proj/readme", res)
	}
	if after := sh(t, cfg, "sync", state, ""); after != before {
		t.Errorf("the conflicting sync changed the group:\nbefore %q\nafter  %q", before, after)
	}
	if left := sh(t, cfg, "sync", `cd `+dir+` && ls "$(git rev-parse --git-dir)" | grep -e MERGE -e REBASE -e CHERRY || true`, ""); left != "" {
		t.Errorf("the conflicting sync left %q in the group's git folder", left)
	}
}
