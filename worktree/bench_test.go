package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// Run with, for example:
//
//	go test -run '^$' -bench 'CreateWorktree/paired|Changes/(stat|patch)/paired' -benchtime 4x -count 3 ./worktree
//
// (BENCHMARKS.md has the commands behind its figures; all of them at -count 5 take over an hour
// on 2 cores.) The benchmarks measure groups on a repository of real size, made once per run from a copy of
// Go's own source tree ($(go env GOROOT)/src, about 11,500 files, committed once), each beside
// its baseline in the same run: the same work done by git commands run by hand, as a person
// would type them. What one op is, and why each baseline is the fair one, is in BENCHMARKS.md.
// They skip when GOROOT/src is missing.

// benchGroup is the group whose checkout holds the 1,000-file change that BenchmarkChanges
// reads.
const benchGroup = "bench"

// Numbers of the change made in benchGroup's checkout: edited files (the first benchStaged of
// them staged, the rest not) and new untracked files.
const (
	benchEdited    = 1000
	benchStaged    = 400
	benchUntracked = 10
)

// benchState is the repository the benchmarks share: made once, removed by TestMain.
var benchState struct {
	once    sync.Once
	err     error
	tmp     string // holds everything below; removed at the end of the run
	top     string // the main checkout
	root    string // the worktrees root
	group   Group  // benchGroup, with the change in its checkout
	index   string // benchGroup's own index, which the baselines copy as Changes does
	created int    // a counter that names the groups the Create benchmarks make
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchState.tmp != "" {
		os.RemoveAll(benchState.tmp)
	}
	testbin.Cleanup() // the static krad BenchmarkChangesSSH built
	os.Exit(code)
}

// benchRepo returns the shared repository, making it on first use; it skips the benchmark when
// GOROOT/src is missing.
func benchRepo(b *testing.B) *Repo {
	b.Helper()
	setup(b)
	s := &benchState
	s.once.Do(func() { s.err = makeBenchRepo() })
	if e, ok := s.err.(errSkip); ok {
		b.Skip(e.why)
	}
	if s.err != nil {
		b.Fatal(s.err)
	}
	r, err := Open(context.Background(), s.top)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// makeBenchRepo copies GOROOT/src into a new repository, commits it, makes benchGroup and
// changes 1,000 files in its checkout.
func makeBenchRepo() error {
	s := &benchState
	var err error
	if s.tmp, err = os.MkdirTemp("", "krad-bench-"); err != nil {
		return err
	}
	s.top = filepath.Join(s.tmp, "gosrc")
	s.root = filepath.Join(s.tmp, "worktrees")
	if err := testbin.GoSourceRepo(s.top); errors.Is(err, testbin.ErrNoGoSource) {
		return errSkip{err.Error()}
	} else if err != nil {
		return err
	}
	res := Do(context.Background(), Op{Op: OpCreate, Dir: s.top, Root: s.root, Create: &CreateOptions{Name: benchGroup}})
	if err := res.Err(); err != nil {
		return err
	}
	s.group = *res.Group
	d := s.group.Dir

	// The change: benchEdited Go files spread evenly over the tree, each with a line added near
	// its top and one at its end, the first benchStaged of them staged; and benchUntracked new
	// files, half in a new folder.
	out, err := byHand(d, nil, nil, "ls-files", "-z", "--", "*.go")
	if err != nil {
		return err
	}
	all := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	sort.Strings(all)
	if len(all) < benchEdited {
		return fmt.Errorf("only %d Go files in %s", len(all), s.top)
	}
	var staged bytes.Buffer
	for i := range benchEdited {
		name := all[i*len(all)/benchEdited]
		p := filepath.Join(d, name)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		first, rest, _ := bytes.Cut(data, []byte("\n"))
		edited := fmt.Appendf(nil, "%s\n// Edited by the krad benchmark (%d).\n%s// The end of edit %d.\n", first, i, rest, i)
		if err := os.WriteFile(p, edited, 0o644); err != nil {
			return err
		}
		if i < benchStaged {
			staged.WriteString(name)
			staged.WriteByte(0)
		}
	}
	if _, err := byHand(d, nil, &staged, "add", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		return err
	}
	for i := range benchUntracked {
		name := fmt.Sprintf("krad-bench/new%d.go", i)
		if i%2 == 1 {
			name = fmt.Sprintf("strings/krad_bench_new%d.go", i)
		}
		p := filepath.Join(d, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "package x\n\n// New file %d.\nconst N%d = %d\n", i, i, i), 0o644); err != nil {
			return err
		}
	}
	// An agent's own git status refreshes its index, as it would be when Changes is asked for.
	if _, err := byHand(d, nil, nil, "status", "--porcelain"); err != nil {
		return err
	}
	out, err = byHand(d, nil, nil, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return err
	}
	s.index = strings.TrimSpace(string(out))
	return nil
}

// errSkip is makeBenchRepo's error when the benchmark cannot run on this machine.
type errSkip struct{ why string }

func (e errSkip) Error() string { return e.why }

// byHand runs git in dir as a person would type it: the environment as it is, plus env.
func byHand(dir string, env []string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// nextName names a group no benchmark has made yet in this run.
func nextName(prefix string) string {
	benchState.created++
	return fmt.Sprintf("%s-%d", prefix, benchState.created)
}

// removeGroup removes what a Create benchmark made: the worktree (locked: hence two --force) and
// its branch.
func removeGroup(b *testing.B, top, dir, branch string) {
	b.Helper()
	if _, err := byHand(top, nil, nil, "worktree", "remove", "--force", "--force", "--", dir); err != nil {
		b.Fatal(err)
	}
	if _, err := byHand(top, nil, nil, "branch", "-q", "-D", "--", branch); err != nil {
		b.Fatal(err)
	}
}

// paired runs baseline and krad one after the other b.N times, taking turns at going first, and
// reports the median time of each and the median of their ratios, krad ÷ baseline, pair by pair.
// Other work on the machine moves a run's figures by more than the goals' margins; two runs a
// moment apart see nearly the same load, so the pairs' ratio is the figure the goals are judged
// on. ns/op is a pair's time. after, when not nil, runs after each pair, untimed.
func paired(b *testing.B, baseline, krad func(b *testing.B), after func()) {
	timed := func(f func(*testing.B)) func(*testing.B) time.Duration {
		return func(b *testing.B) time.Duration {
			t0 := time.Now()
			f(b)
			return time.Since(t0)
		}
	}
	pairedTimes(b, timed(baseline), timed(krad), after)
}

// pairedTimes is paired for ops that time themselves: each returns the time of its own op, so
// that it can do untimed work before and after it (put the main checkout back, say).
var pairedTimes = testbin.PairedTimes

// BenchmarkCreateWorktree is one group made, as the app makes it for CreateWorktree (Do with an
// OpCreate), against `git worktree add --lock -b BRANCH DIR HEAD` run by hand on the same
// repository: the same branch and locked checkout, nothing else.
func BenchmarkCreateWorktree(b *testing.B) {
	r := benchRepo(b)
	s := &benchState
	ctx := context.Background()
	// Each makes a group, and returns what removes it (outside the time measured).
	baseline := func(b *testing.B) func() {
		name := nextName("hand")
		dir := filepath.Join(s.root, r.Key, name)
		if _, err := byHand(r.Top, nil, nil, "worktree", "add", "-q", "--lock", "-b", BranchPrefix+name, "--", dir, "HEAD"); err != nil {
			b.Fatal(err)
		}
		return func() { removeGroup(b, r.Top, dir, BranchPrefix+name) }
	}
	krad := func(b *testing.B) func() {
		res := Do(ctx, Op{Op: OpCreate, Dir: r.Top, Root: s.root, Create: &CreateOptions{Name: nextName("krad")}})
		if err := res.Err(); err != nil {
			b.Fatal(err)
		}
		return func() { removeGroup(b, r.Top, res.Group.Dir, res.Group.Branch) }
	}
	b.Run("baseline=git-worktree-add", alone(baseline))
	b.Run("krad=Do", alone(krad))
	b.Run("paired", func(b *testing.B) { pairedMakes(b, baseline, krad) })
}

// alone is a benchmark of makeOne, which makes groups and returns what removes them: the
// removing is not timed.
func alone(makeOne func(*testing.B) func()) func(*testing.B) {
	return func(b *testing.B) {
		for range b.N {
			remove := makeOne(b)
			b.StopTimer()
			remove()
			b.StartTimer()
		}
	}
}

// pairedMakes is paired for two such makers, the groups of each pair removed after it. The disk
// is synced before each op, untimed: else the op that goes second in a pair waits for the first
// one's 157 MB to be written back (the kernel throttles a writer behind dirty pages), and the
// removal of the pair before slows the next pair's first op. Give it an even b.N, so that each
// goes first as often.
func pairedMakes(b *testing.B, baseline, krad func(*testing.B) func()) {
	var removes []func()
	keep := func(makeOne func(*testing.B) func()) func(*testing.B) time.Duration {
		return func(b *testing.B) time.Duration {
			syscall.Sync()
			t0 := time.Now()
			remove := makeOne(b)
			d := time.Since(t0)
			removes = append(removes, remove)
			return d
		}
	}
	pairedTimes(b, keep(baseline), keep(krad), func() {
		for _, remove := range removes {
			remove()
		}
		removes = nil
	})
}

// BenchmarkCreate8 is 8 groups made at once (8 goroutines each calling Do with an OpCreate, in
// the same repository) against 8 `git worktree add` run by hand one after another. One op is all
// 8.
func BenchmarkCreate8(b *testing.B) {
	const n = 8
	r := benchRepo(b)
	s := &benchState
	ctx := context.Background()
	// Each makes 8 groups, and returns what removes them (outside the time measured).
	oneAfterAnother := func(b *testing.B) func() {
		var dirs, names []string
		for range n {
			name := nextName("hand8")
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
	atOnce := func(b *testing.B) func() {
		results := make([]Result, n)
		var wg sync.WaitGroup
		for i := range n {
			name := nextName("krad8")
			wg.Go(func() {
				results[i] = Do(ctx, Op{Op: OpCreate, Dir: r.Top, Root: s.root, Create: &CreateOptions{Name: name}})
			})
		}
		wg.Wait()
		for _, res := range results {
			if err := res.Err(); err != nil {
				b.Fatal(err)
			}
		}
		return func() {
			for _, res := range results {
				removeGroup(b, r.Top, res.Group.Dir, res.Group.Branch)
			}
		}
	}
	b.Run("baseline=git-worktree-add-x8-one-after-another", alone(oneAfterAnother))
	b.Run("krad=Do-x8-at-once", alone(atOnce))
	b.Run("paired", func(b *testing.B) { pairedMakes(b, oneAfterAnother, atOnce) })
}

// BenchmarkChanges is a Changes of the group whose checkout holds the 1,000-file change, as the
// app asks for it (Do with an OpChanges), stat and full patch, against the same answer from git
// commands run by hand on a temporary index: the group's index copied with its time (in Go, as
// Changes copies it), `git add -A` into the copy, then `git diff --cached -M --numstat -z BASE` for the
// stat and, for the patch, that and `git diff --cached -M BASE` (Changes answers both the
// complete list with line counts and the patch). patch/reference=git-diff-only leaves the list
// out: the patch alone, for comparison.
func BenchmarkChanges(b *testing.B) {
	r := benchRepo(b)
	s := &benchState
	ctx := context.Background()
	base := s.group.BaseCommit
	checkFiles := func(b *testing.B, n int) {
		if want := benchEdited + benchUntracked; n != want {
			b.Fatalf("%d files changed, want %d", n, want)
		}
	}
	byHandChanges := func(b *testing.B, patch, list bool) {
		tmp, err := os.CreateTemp("", "krad-bench-index-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.Remove(tmp.Name())
		_, mtime, _, err := copyFile(tmp, s.index)
		if err != nil {
			b.Fatal(err)
		}
		tmp.Close()
		// With the index's own time, as Changes copies it (cp -p).
		if err := os.Chtimes(tmp.Name(), mtime, mtime); err != nil {
			b.Fatal(err)
		}
		env := []string{"GIT_INDEX_FILE=" + tmp.Name()}
		if _, err := byHand(s.group.Dir, env, nil, "add", "-A"); err != nil {
			b.Fatal(err)
		}
		if list {
			out, err := byHand(s.group.Dir, env, nil, "diff", "--cached", "-M", "--numstat", "-z", base)
			if err != nil {
				b.Fatal(err)
			}
			checkFiles(b, bytes.Count(out, []byte{0}))
		}
		if patch {
			out, err := byHand(s.group.Dir, env, nil, "diff", "--cached", "-M", base)
			if err != nil {
				b.Fatal(err)
			}
			if n := bytes.Count(out, []byte("\ndiff --git ")) + 1; n != benchEdited+benchUntracked {
				b.Fatalf("%d files' patches, want %d", n, benchEdited+benchUntracked)
			}
			b.ReportMetric(float64(len(out)), "patch-bytes")
		}
	}
	krad := func(b *testing.B, patch bool) {
		res := Do(ctx, Op{Op: OpChanges, Dir: r.Top, Group: benchGroup, Changes: &ChangesOptions{Stat: !patch}})
		if err := res.Err(); err != nil {
			b.Fatal(err)
		}
		checkFiles(b, len(res.Changes.Files))
		if patch {
			for _, f := range res.Changes.Files {
				if f.LeftOut != "" {
					b.Fatalf("%s left out of the patch: %s", f.Path, f.LeftOut)
				}
			}
			b.ReportMetric(float64(len(res.Changes.Patch)), "patch-bytes")
		}
	}
	// One of each first, untimed: the first reads of the change's blobs come from the disk.
	byHandChanges(b, true, true)
	krad(b, true)
	for _, mode := range []string{"stat", "patch"} {
		patch := mode == "patch"
		b.Run(mode+"/baseline=git-by-hand", func(b *testing.B) {
			for range b.N {
				byHandChanges(b, patch, true)
			}
		})
		if patch {
			b.Run(mode+"/reference=git-diff-only", func(b *testing.B) {
				for range b.N {
					byHandChanges(b, true, false)
				}
			})
		}
		b.Run(mode+"/paired", func(b *testing.B) {
			paired(b, func(b *testing.B) { byHandChanges(b, patch, true) }, func(b *testing.B) { krad(b, patch) }, nil)
		})
		b.Run(mode+"/krad=Do", func(b *testing.B) {
			for range b.N {
				krad(b, patch)
			}
		})
	}
}
