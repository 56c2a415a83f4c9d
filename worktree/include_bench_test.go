package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The include step's benchmark, on a repository of its own: run with, for example,
//
//	go test -run '^$' -bench 'IncludeNodeModules' -benchtime 20x -count 3 ./worktree

// includeBenchFiles is how many ignored files the benchmark's node_modules holds: 1,000
// packages of 50 files, 25 in the package's folder and 25 in its lib/sub, 3,001 folders in all.
const includeBenchFiles = 50_000

// includeBenchRepo makes the benchmark's repository: a few tracked files, a .gitignore that
// ignores node_modules/ and .env, a .env, a .worktreeinclude that names .env, and a node_modules
// of includeBenchFiles files, none of them named by .worktreeinclude. It returns the main
// checkout.
func includeBenchRepo(b *testing.B) string {
	b.Helper()
	setup(b)
	top := filepath.Join(b.TempDir(), "app")
	mk := func(name, content string) {
		p := filepath.Join(top, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	mk("README", "hello\n")
	mk("src/main.js", "console.log('hi')\n")
	mk(".gitignore", "node_modules/\n.env\n")
	mk(IncludeFile, ".env\n")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "first"}} {
		if _, err := byHand(top, nil, nil, args...); err != nil {
			b.Fatal(err)
		}
	}
	mk(".env", "TOKEN=1\n")
	for p := range includeBenchFiles / 50 {
		for f := range 25 {
			mk(fmt.Sprintf("node_modules/pkg%d/f%d.js", p, f), "x")
			mk(fmt.Sprintf("node_modules/pkg%d/lib/sub/g%d.js", p, f), "x")
		}
	}
	return top
}

// BenchmarkIncludeNodeModules is the include step of a new group's checkout (what
// CreateWorktree does once git has checked it out: copy the ignored files .worktreeinclude
// names) in a repository beside a node_modules of 50,000 ignored files, with a .worktreeinclude
// that names .env alone. One op copies .env into an empty folder (made before the op, untimed).
// Its baseline is the git command the include step used to run, by hand:
// `git ls-files -z --others --ignored --exclude-from=.worktreeinclude`, which lists the same
// one file by looking at each of the 50,000; the reference, `git ls-files -z --others --ignored
// --exclude-standard --directory`, is the least git does to say what the repository ignores
// (node_modules/ as one folder, unopened).
func BenchmarkIncludeNodeModules(b *testing.B) {
	top := includeBenchRepo(b)
	r, err := Open(context.Background(), top)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	lsFiles := func(args ...string) func(*testing.B) time.Duration {
		return func(b *testing.B) time.Duration {
			t0 := time.Now()
			out, err := byHand(top, nil, nil, args...)
			d := time.Since(t0)
			if err != nil || len(out) == 0 {
				b.Fatalf("%v: %q", err, out)
			}
			return d
		}
	}
	baseline := lsFiles("ls-files", "-z", "--others", "--ignored", "--exclude-from="+IncludeFile)
	reference := lsFiles("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	krad := func(b *testing.B) time.Duration {
		b.StopTimer()
		dst := b.TempDir()
		b.StartTimer()
		t0 := time.Now()
		in, err := r.include(ctx, dst, nil)
		d := time.Since(t0)
		if err != nil || in == nil || in.Files != 1 || in.Cut != "" || len(in.Skipped) != 0 {
			b.Fatalf("include: %+v, %v; want .env alone", in, err)
		}
		return d
	}
	timedOps := func(op func(*testing.B) time.Duration) func(*testing.B) {
		return func(b *testing.B) {
			for range b.N {
				op(b)
			}
		}
	}
	b.Run("baseline=git-ls-files-exclude-from", timedOps(baseline))
	b.Run("reference=git-ls-files-directory", timedOps(reference))
	b.Run("krad=include", timedOps(krad))
	b.Run("paired", func(b *testing.B) { pairedTimes(b, baseline, krad, nil) })
}
