package worktree

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestRetireHoldsNestedRepo: a worker's own repository inside the checkout (git init, a commit)
// keeps the checkout in place: the retire removes nothing, says which folder, and the group is
// listed held; the nested commit is still there. A forced retire then removes it.
func TestRetireHoldsNestedRepo(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "nest")
	nested := filepath.Join(g.Dir, "tools", "inner")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, nested, "init", "-q", "-b", "main")
	write(t, nested, "a.txt", "only here\n")
	run(t, nested, "add", "a.txt")
	run(t, nested, "commit", "-q", "-m", "nested work")
	commit := run(t, nested, "rev-parse", "HEAD")

	res := Do(ctx, Op{Op: OpRetire, Dir: r.Top, Group: "nest"})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	ret := res.Retired
	if ret.Removed || !reflect.DeepEqual(ret.Held, []string{"tools/inner"}) || ret.Snapshot != "" || ret.BranchDeleted {
		t.Errorf("Retire = %+v, want held by tools/inner, nothing removed", ret)
	}
	if got := run(t, nested, "cat-file", "-t", commit); got != "commit" {
		t.Errorf("the nested commit %s is %q", commit, got)
	}
	if _, err := os.Stat(filepath.Join(g.Dir, "README")); err != nil {
		t.Errorf("the checkout is gone: %v", err)
	}
	groups, err := r.Groups(ctx)
	if err != nil || len(groups) != 1 || !reflect.DeepEqual(groups[0].Held, []string{"tools/inner"}) {
		t.Fatalf("Groups = %+v, %v; want nest held by tools/inner", groups, err)
	}
	// A terminal joining it works in it again: it is no longer listed held.
	if res := Do(ctx, Op{Op: OpCreate, Dir: r.Top, Create: &CreateOptions{Name: "nest"}, Join: true}); res.Error != nil || !res.Joined || res.Group.Held != nil {
		t.Errorf("join of the held group = %+v, %v", res.Group, res.Error)
	}
	if groups, err := r.Groups(ctx); err != nil || len(groups) != 1 || groups[0].Held != nil {
		t.Errorf("Groups after a join = %+v, %v; want nest not held", groups, err)
	}
	// A retire again (its last terminal closing again, the app attaching) holds it again.
	if ret, err := r.Retire(ctx, "nest"); err != nil || ret.Removed || len(ret.Held) != 1 {
		t.Errorf("second Retire = %+v, %v", ret, err)
	}

	res = Do(ctx, Op{Op: OpRetire, Dir: r.Top, Group: "nest", Force: true})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if !res.Retired.Removed || res.Retired.Held != nil {
		t.Errorf("forced Retire = %+v, want removed", res.Retired)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Errorf("the checkout %s is still there after a forced retire: %v", g.Dir, err)
	}
	if groups, err := r.Groups(ctx); err != nil || len(groups) != 0 {
		t.Errorf("Groups after the forced retire = %+v, %v", groups, err)
	}
}

// TestRetireSubmodule: a submodule whose work is all on its remote does not hold the group; one
// with a commit its remote lacks does.
func TestRetireSubmodule(t *testing.T) {
	ctx := context.Background()
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "protocol.file.allow")
	t.Setenv("GIT_CONFIG_VALUE_0", "always")
	lib := newRepo(t)
	for _, tc := range []struct {
		name   string
		commit bool
		held   []string
	}{{"clean", false, nil}, {"ahead", true, []string{"lib"}}} {
		t.Run(tc.name, func(t *testing.T) {
			r, g := newGroup(t, tc.name)
			run(t, g.Dir, "submodule", "add", "-q", lib, "lib")
			run(t, g.Dir, "commit", "-q", "-m", "add lib")
			sub := filepath.Join(g.Dir, "lib")
			if tc.commit {
				write(t, sub, "new.txt", "unpushed\n")
				run(t, sub, "add", "new.txt")
				run(t, sub, "commit", "-q", "-m", "unpushed")
			}
			ret, err := r.Retire(ctx, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ret.Held, tc.held) || ret.Removed == (tc.held != nil) {
				t.Errorf("Retire = %+v, want held %v", ret, tc.held)
			}
		})
	}
}
