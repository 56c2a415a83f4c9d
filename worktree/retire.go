package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/krad-ade/krad/internal/termsafe"
)

// SnapshotIdentity is the author and committer of snapshot commits: fixed, so that a snapshot
// needs no user config and says who made it.
var SnapshotIdentity = [2]string{"krad-ade", "krad-ade@localhost"}

// Retired is what [Repo.Retire] removed and what it kept.
type Retired struct {
	Group string `json:"group"`
	// Dir is the checkout; Removed says whether it is gone.
	Dir     string `json:"dir"`
	Removed bool   `json:"removed"`
	// Snapshot is the ref the group's uncommitted work was kept on (refs/krad/snapshots/<name>)
	// and SnapshotCommit its commit; both "" when there was nothing uncommitted.
	Snapshot       string `json:"snapshot,omitempty"`
	SnapshotCommit string `json:"snapshot_commit,omitempty"`
	// Branch is the group's branch; BranchDeleted says whether it was deleted, and BranchKept,
	// when it was not, why.
	Branch        string `json:"branch"`
	BranchDeleted bool   `json:"branch_deleted"`
	BranchKept    string `json:"branch_kept,omitempty"`
	// Held lists the folders (relative to Dir, slash-separated) whose git data a snapshot cannot
	// hold, for which the checkout stays in place (Removed false, nothing else done): see
	// [Group.Held]. Only [Repo.RetireForce] removes such a checkout.
	Held []string `json:"held,omitempty"`
}

// Retire ends a group, losing nothing: first its uncommitted work (staged, unstaged and untracked
// files; not ignored ones) is kept as a snapshot commit on refs/krad/snapshots/<name>, made with
// commit-tree (no hooks, no signing, [SnapshotIdentity]) on top of the group's HEAD, and of an
// earlier snapshot of that name if there is one; then the worktree is unlocked and removed; then
// its branch is deleted only if the app made it and it holds no commit beyond base_commit and
// there is no snapshot. If a step fails, the worktree stays (locked again), and the error names
// its folder.
//
// A checkout that holds git data a snapshot cannot (see [Repo.Unkeepable]: a nested repository,
// whose commits would go with its folder) is not touched: the group is held, its record says
// which folders (Group.Held), and Retired.Held names them. [Repo.RetireForce] removes it anyway.
func (r *Repo) Retire(ctx context.Context, name string) (Retired, error) {
	return r.retire(ctx, name, false)
}

// RetireForce is Retire without the hold: what the person asks for, once told that the
// checkout holds a nested repository; the nested repositories' folders go with the checkout.
func (r *Repo) RetireForce(ctx context.Context, name string) (Retired, error) {
	return r.retire(ctx, name, true)
}

func (r *Repo) retire(ctx context.Context, name string, force bool) (Retired, error) {
	g, err := r.group(ctx, name)
	if err != nil {
		return Retired{}, err
	}
	ret := Retired{Group: name, Dir: g.Dir, Branch: g.Branch}
	fail := func(err error) (Retired, error) {
		return ret, fmt.Errorf("retire group %s: %w; its worktree %s stays", name, err, termsafe.Quote(g.Dir))
	}

	// 0. What a snapshot cannot hold keeps the checkout where it is.
	if !g.Missing && !force {
		held, err := r.Unkeepable(ctx, g.Dir)
		if err != nil {
			return fail(fmt.Errorf("look for nested repositories: %w", err))
		}
		if len(held) > 0 {
			g.Held = held
			if err := r.writeMeta(g); err != nil {
				return fail(fmt.Errorf("record that it is held: %w", err))
			}
			ret.Held = held
			return ret, nil
		}
	}
	snapRef := SnapshotPrefix + name
	var oldSnap string

	// 1. Keep uncommitted work. A folder deleted from under git has none left to keep.
	if g.Missing {
		if oldSnap, err = r.resolve(ctx, snapRef); err != nil && !errors.Is(err, ErrNotFound) {
			return fail(err)
		}
	} else {
		commit, old, err := r.snapshot(ctx, g, "krad-ade: the uncommitted work of group "+name+" when it retired")
		if err != nil {
			return fail(err)
		}
		oldSnap = old
		if commit != "" {
			ret.Snapshot, ret.SnapshotCommit = snapRef, commit
		}
	}

	// 2. Remove the worktree. First a mark that it is going (retiringMark): git deletes the
	// checkout's files one by one, and a Changes reading them meanwhile would take the half not
	// yet deleted for the group's work; with the mark, it answers an error (see removed). Then
	// unlock it, then remove it; if removing fails, lock it again. The mark goes once git is
	// done, whether it removed the worktree or not.
	mark := r.retiringMark(name)
	if err := os.WriteFile(mark, nil, 0o600); err != nil {
		return fail(err)
	}
	if g.Locked {
		if _, err := git(ctx, gitRun{dir: r.Top, write: true}, "worktree", "unlock", "--", g.Dir); err != nil {
			os.Remove(mark)
			return fail(err)
		}
	}
	// --force: its uncommitted work is kept above; git refuses otherwise when there is any.
	unlock, err := r.lockAdmin(ctx)
	if err != nil {
		os.Remove(mark)
		return fail(fmt.Errorf("lock the repository's worktrees: %w", err))
	}
	_, err = git(ctx, gitRun{dir: r.Top, write: true}, "worktree", "remove", "--force", "--", g.Dir)
	unlock()
	if err != nil {
		if g.Locked {
			relock, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
			git(relock, gitRun{dir: r.Top, write: true}, "worktree", "lock", "--reason", lockReason(name), "--", g.Dir)
			cancel()
		}
		os.Remove(mark)
		return fail(err)
	}
	os.Remove(mark)
	ret.Removed = true

	// 3. The branch: only one the app made, that holds nothing.
	switch tip, err := r.resolve(ctx, "refs/heads/"+g.Branch); {
	case !g.MadeBranch:
		ret.BranchKept = "the app did not make it"
	case errors.Is(err, ErrNotFound):
		ret.BranchKept = "it is gone already"
	case err != nil:
		return ret, fmt.Errorf("retire group %s: its worktree is removed, its branch %s kept: %w", name, g.Branch, err)
	case tip != g.BaseCommit:
		ret.BranchKept = "it is no longer at its base commit (it holds commits, or was moved)"
	case ret.Snapshot != "" || oldSnap != "":
		ret.BranchKept = "a snapshot of its work is kept on " + snapRef
	default:
		if _, err := git(ctx, gitRun{dir: r.Top, write: true}, "update-ref", "-m", "krad-ade: group "+name+" retired", "-d", "refs/heads/"+g.Branch, tip); err != nil {
			return ret, fmt.Errorf("retire group %s: its worktree is removed, its branch %s kept: %w", name, g.Branch, err)
		}
		ret.BranchDeleted = true
	}
	return ret, nil
}

// retiringMark is the file, in the repository's git folder, that marks group name's worktree as
// being removed by Retire, from before git begins until it is done: not in the worktree's admin
// folder, which git deletes a file at a time in no set order while the checkout may still be
// half there. Left by a Retire that was killed midway, it says so to Changes until the group is
// retired again; a group made later under that name clears it.
func (r *Repo) retiringMark(name string) string {
	return filepath.Join(r.CommonDir, "krad-retiring-"+name)
}

// lockTimeout bounds locking a worktree again after a failed removal, which is done even when the
// request's context has ended.
const lockTimeout = 10 * time.Second

// keepWork keeps g's whole state, uncommitted files included (not ignored ones), as a commit: a
// snapshot commit on refs/krad/snapshots/<name> when there is uncommitted work (made with
// commit-tree: no hooks, no signing, SnapshotIdentity; on top of g's HEAD, and of an earlier
// snapshot of that name), else g's HEAD itself. It returns that commit.
func (r *Repo) keepWork(ctx context.Context, g Group, message string) (string, error) {
	commit, _, err := r.snapshot(ctx, g, message)
	if err != nil || commit != "" {
		return commit, err
	}
	if g.Head == "" {
		return "", fmt.Errorf("group %s has no commit checked out and nothing uncommitted", g.Name)
	}
	return g.Head, nil
}

// snapshot makes the snapshot commit of g's uncommitted work, when there is any, and moves
// refs/krad/snapshots/<name> to it (refusing if the ref moved meanwhile, rather than losing
// that); commit is "" when there was nothing uncommitted. old is the snapshot ref's commit before,
// "" for none.
func (r *Repo) snapshot(ctx context.Context, g Group, message string) (commit, old string, err error) {
	ref := SnapshotPrefix + g.Name
	old, err = r.resolve(ctx, ref)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", "", err
	}
	tree, err := workTree(ctx, g.Dir, indexOf(g))
	if err != nil {
		return "", old, fmt.Errorf("read its uncommitted work: %w", err)
	}
	headTree := ""
	if g.Head != "" {
		out, err := git(ctx, gitRun{dir: g.Dir}, "rev-parse", "--verify", g.Head+"^{tree}")
		if err != nil {
			return "", old, err
		}
		headTree = strings.TrimSpace(string(out))
	}
	if tree == headTree {
		return "", old, nil
	}
	args := []string{"commit-tree", "--no-gpg-sign", "-m", message}
	if g.Head != "" {
		args = append(args, "-p", g.Head)
	}
	if old != "" {
		args = append(args, "-p", old)
	}
	id := []string{
		"GIT_AUTHOR_NAME=" + SnapshotIdentity[0], "GIT_AUTHOR_EMAIL=" + SnapshotIdentity[1],
		"GIT_COMMITTER_NAME=" + SnapshotIdentity[0], "GIT_COMMITTER_EMAIL=" + SnapshotIdentity[1],
	}
	out, err := git(ctx, gitRun{dir: g.Dir, env: id, write: true}, append(args, tree)...)
	if err != nil {
		return "", old, fmt.Errorf("keep its uncommitted work: %w", err)
	}
	commit = strings.TrimSpace(string(out))
	if _, err := git(ctx, gitRun{dir: r.Top, write: true}, "update-ref", "-m", message, ref, commit, old); err != nil {
		return "", old, fmt.Errorf("keep its uncommitted work: %w", err)
	}
	return commit, old, nil
}
