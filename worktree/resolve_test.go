package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

// TestResolve: OpResolve follows symlinks as the kernel does (a ".." after a link is the parent of
// its target), resolves a file not made yet through its folder, answers "" for a path whose folder
// is not there, needs no repository, and refuses a relative path or too many.
func TestResolve(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in, out := filepath.Join(base, "in"), filepath.Join(base, "out", "deep")
	for _, d := range []string{in, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(out, filepath.Join(in, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	paths := []string{
		in + "/file",
		in + "/link/x",
		in + "/link/../secret",
		in + "/new-file",
		in + "/no/such/folder/x",
		in + "/link/..",
	}
	want := []string{
		in + "/file",
		out + "/x",
		filepath.Join(base, "out", "secret"),
		in + "/new-file",
		"",
		filepath.Join(base, "out"),
	}
	res := Do(context.Background(), Op{Op: OpResolve, Resolve: &ResolveOptions{Paths: paths}})
	if res.Error != nil || res.Resolved == nil {
		t.Fatalf("resolve: %+v", res)
	}
	for i := range paths {
		if got := res.Resolved.Paths[i]; got != want[i] {
			t.Errorf("%s resolved to %q, want %q", paths[i], got, want[i])
		}
	}
	for _, bad := range [][]string{nil, {"relative/x"}, {"/a\x00b"}, make([]string, MaxResolve+1)} {
		res := Do(context.Background(), Op{Op: OpResolve, Resolve: &ResolveOptions{Paths: bad}})
		if res.Error == nil || res.Error.Code != api.CodeBadRequest || !strings.Contains(res.Error.Message, "resolve") {
			t.Errorf("resolve %q: %+v, want bad_request", bad, res)
		}
	}
}
