package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// A pick writes its commit's files into the main checkout with `git read-tree -m -u`, and a
// continued branch gets its snapshot back the same way. git refuses there to overwrite a tracked
// file's changes and an untracked file, but it takes an ignored file as expendable (an .env is
// replaced, and the person's is gone), and it goes neither through a symbolic link nor around a
// folder in the way: it removes them. So before anything is written, overwrites looks at every
// path the move writes, on the checkout's filesystem, each folder on the way with lstat.
//
// What the move may replace is only what is its own: a tracked file of the tree it moves from,
// with no change that is not committed (which git checks as it writes, and overwrites names
// first). Anything else that exists where it writes, or on the way there, is in the way: a file
// (ignored or not), a symbolic link (to a folder or not), a folder where a file goes (one the
// old tree had is in the way only for what in it is not tracked), something that is not a
// regular file. A file that appears after the look is git's to refuse, as before.

// inTheWay is a path of a checkout that a move would write over, and what it is ("" for a file).
type inTheWay struct {
	path, what string
}

// maxNamed is how many paths a refusal names; it says how many more there are.
const maxNamed = 20

// overwrites lists what of the checkout at top the move from tree-ish from to tree-ish to (both
// commits or trees of the repository) would write over that is not its own to replace, sorted by
// path. The checkout's index must be from's: a pick checks that first.
func overwrites(ctx context.Context, top, from, to string) ([]inTheWay, error) {
	out, err := git(ctx, gitRun{dir: top}, "diff-tree", "-r", "-z", "--raw", "--no-renames", "--ignore-submodules=none", from, to, "--")
	if err != nil {
		return nil, fmt.Errorf("list what the change writes: %w", err)
	}
	var (
		written    []string
		replaced   = map[string]bool{} // the old tree's files that the move changes or removes
		replacedIn = map[string]bool{} // the folders that hold them
	)
	fields := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		// ":<old mode> <new mode> <old id> <new id> <status>", then the path.
		meta, path := strings.Fields(strings.TrimPrefix(string(fields[i]), ":")), string(fields[i+1])
		if len(meta) != 5 {
			return nil, fmt.Errorf("list what the change writes: git diff-tree printed %s", termsafe.QuoteMax(string(fields[i]), 80))
		}
		if meta[0] != "000000" {
			replaced[path] = true
			for d := filepath.Dir(path); d != "."; d = filepath.Dir(d) {
				replacedIn[d] = true
			}
		}
		if meta[1] != "000000" {
			written = append(written, path)
		}
	}
	found := map[string]string{}
	if len(replaced) > 0 {
		// Changes not committed in what the move replaces: the work tree against the index,
		// which is from's.
		out, err := git(ctx, gitRun{dir: top}, "diff", "--no-ext-diff", "--no-renames", "--ignore-submodules=none", "--name-only", "-z")
		if err != nil {
			return nil, fmt.Errorf("list the checkout's changes: %w", err)
		}
		for _, p := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			if replaced[p] {
				found[p] = "changes not committed"
			}
		}
	}
	folders := map[string]bool{} // paths on the way known to be real folders
	for _, p := range written {
		parts := strings.Split(p, "/")
	path:
		for i := 1; i <= len(parts); i++ {
			q := strings.Join(parts[:i], "/")
			leaf := i == len(parts)
			if !leaf && folders[q] {
				continue
			}
			fi, err := os.Lstat(filepath.Join(top, q))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				break path // nothing there, nor below
			case err != nil:
				return nil, fmt.Errorf("look at %s in the checkout: %w", termsafe.Quote(q), err)
			case replaced[q]:
				break path // the old tree's file, which the move replaces: git checks it
			case !leaf && fi.IsDir():
				folders[q] = true
			case leaf && fi.IsDir() && replacedIn[q]:
				// A folder of the old tree that becomes a file: what in it is not the old
				// tree's is in the way.
				if err := notTracked(top, q, replaced, found); err != nil {
					return nil, err
				}
				break path
			default:
				found[q] = kind(fi)
				break path
			}
		}
	}
	list := make([]inTheWay, 0, len(found))
	for p, what := range found {
		list = append(list, inTheWay{p, what})
	}
	slices.SortFunc(list, func(a, b inTheWay) int { return strings.Compare(a.path, b.path) })
	return list, nil
}

// notTracked adds to found what is in folder dir of the checkout at top and not among tracked.
func notTracked(top, dir string, tracked map[string]bool, found map[string]string) error {
	return filepath.WalkDir(filepath.Join(top, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("look in %s of the checkout: %w", termsafe.Quote(dir), err)
		}
		rel, _ := filepath.Rel(top, p)
		if d.IsDir() || tracked[rel] {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return fmt.Errorf("look at %s in the checkout: %w", termsafe.Quote(rel), err)
		}
		found[rel] = kind(fi)
		return nil
	})
}

// kind says what fi is, when it is not a regular file.
func kind(fi fs.FileInfo) string {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "a symbolic link"
	case fi.IsDir():
		return "a folder"
	case !fi.Mode().IsRegular():
		return "not a regular file"
	}
	return ""
}

// overwriteConflict is the refusal of what (a pick, a snapshot's restore) that would write over
// found in the checkout where (its name and folder): a conflict that names up to maxNamed paths
// and says how many more, with the next step.
func overwriteConflict(what, where string, found []inTheWay, next string) error {
	named := make([]string, 0, min(len(found), maxNamed))
	for _, f := range found[:min(len(found), maxNamed)] {
		s := termsafe.Quote(f.path)
		if f.what != "" {
			s += " (" + f.what + ")"
		}
		named = append(named, s)
	}
	more := ""
	if len(found) > maxNamed {
		more = fmt.Sprintf(" and %d more", len(found)-maxNamed)
	}
	noun := "files"
	if len(found) == 1 {
		noun = "file"
	}
	return api.Errorf(api.CodeConflict, "%s would write over %d %s in %s, none of which it may replace (ignored or untracked files, folders or symbolic links where it writes or on the way, changes not committed): %s%s; nothing was changed. %s",
		what, len(found), noun, where, strings.Join(named, ", "), more, next).WithCause(ErrConflict).WithReason(api.ReasonInTheWay)
}
