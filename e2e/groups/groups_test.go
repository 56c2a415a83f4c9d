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
