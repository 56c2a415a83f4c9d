package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// maxHeld bounds how many folders Unkeepable names: past it, one more entry says so.
const maxHeld = 20

// Unkeepable lists the folders under the checkout dir (relative, slash-separated, sorted as the
// walk finds them) whose git data a snapshot of the checkout cannot hold, so that removing the
// checkout would lose it:
//   - a nested repository: a .git folder anywhere below dir (its commits live only there; a
//     snapshot records it as a gitlink, a commit id that exists nowhere else);
//   - a submodule (a .git file below dir, its git folder in the worktree's admin folder, which
//     goes with the worktree) with uncommitted changes, untracked files, or commits on its
//     HEAD or branches that none of its remote-tracking refs hold; one git cannot read counts.
//
// dir's own .git (the worktree's file) is not one. Symbolic links are not followed. At most
// maxHeld are named; a last entry "…" says there are more.
func (r *Repo) Unkeepable(ctx context.Context, dir string) ([]string, error) {
	var held []string
	stop := errors.New("enough")
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			return nil // unreadable below: git could not snapshot it either; not a repository
		}
		if d.Name() != ".git" || path == filepath.Join(dir, ".git") {
			return nil
		}
		parent := filepath.Dir(path)
		rel := filepath.ToSlash(mustRel(dir, parent))
		switch {
		case d.IsDir():
			held = append(held, rel)
		case d.Type().IsRegular():
			if dirty, err := submoduleWork(ctx, parent); err != nil || dirty {
				held = append(held, rel)
			}
		}
		if len(held) > maxHeld {
			held = append(held[:maxHeld], "…")
			return stop
		}
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		return nil, err
	}
	return held, nil
}

// submoduleWork says whether the submodule checked out at dir has work of its own: changes or
// untracked files, or commits on HEAD or a branch that no remote-tracking ref holds.
func submoduleWork(ctx context.Context, dir string) (bool, error) {
	out, err := git(ctx, gitRun{dir: dir}, "status", "--porcelain", "--untracked-files=normal", "--ignore-submodules=none")
	if err != nil {
		return false, fmt.Errorf("read submodule %s: %w", dir, err)
	}
	if len(strings.TrimSpace(string(out))) > 0 {
		return true, nil
	}
	out, err = git(ctx, gitRun{dir: dir}, "rev-list", "-n", "1", "HEAD", "--branches", "--not", "--remotes")
	if err != nil {
		return false, fmt.Errorf("read submodule %s: %w", dir, err)
	}
	return len(strings.TrimSpace(string(out))) > 0, nil
}

func mustRel(base, path string) string {
	rel, err := filepath.Rel(base, path)
	if err != nil {
		return path
	}
	return rel
}
