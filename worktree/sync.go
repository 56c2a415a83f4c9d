package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// A sync brings a group's branch up to the main checkout's HEAD: merged (the default) or rebased
// onto it. Everything is computed off every checkout first (git merge-tree --write-tree, and
// commit-tree), so that a conflict changes nothing at all: not the group's files, not its index,
// not its branch. Only a result known to apply moves the group: its files and index (read-tree
// -m -u, which refuses to overwrite a file changed meanwhile), then its branch (update-ref,
// refusing if the branch moved meanwhile, and then putting the files back). A group with
// uncommitted work is refused rather than stashed: what a worker has not committed is never
// touched.

// The ways a sync takes.
const (
	// SyncMerge merges the main checkout's HEAD into the group's branch: the default, since it
	// never rewrites the branch (one already pushed, or with a pull request, stays pushable
	// without force), and keeps each of the worker's commits as it made it.
	SyncMerge = api.SyncMerge
	// SyncRebase replays the group's commits onto the main checkout's HEAD, one by one, as git
	// rebase does: a straight history, at the cost of new commits (a pushed branch then needs a
	// forced push, which krad does not make). A commit that becomes empty is dropped; a branch
	// with merge commits is refused.
	SyncRebase = api.SyncRebase
)

// SyncOptions are what OpSync takes: the group, and how (SyncMerge when "").
type SyncOptions struct {
	Group string `json:"group"`
	How   string `json:"how,omitempty"`
}

// Synced is what a sync did.
type Synced struct {
	Group  string `json:"group"`
	Branch string `json:"branch"`
	How    string `json:"how"`
	// Onto is the main checkout's HEAD the branch was brought up to, and OntoName its branch
	// ("main"), "" for a detached HEAD.
	Onto     string `json:"onto"`
	OntoName string `json:"onto_name,omitempty"`
	// Old and New are the branch's tip before and after; equal when it was up to date.
	Old string `json:"old"`
	New string `json:"new"`
	// UpToDate: the branch held Onto already, and nothing was done. FastForward: the branch
	// had no commit of its own, and now is Onto.
	UpToDate    bool `json:"up_to_date,omitempty"`
	FastForward bool `json:"fast_forward,omitempty"`
	// Commits is how many of the group's commits a rebase replayed, and Dropped how many of
	// them it dropped, empty once on Onto.
	Commits int `json:"commits,omitempty"`
	Dropped int `json:"dropped,omitempty"`
}

// syncIdentity is the identity of the commits a rebase makes only to compute a result, which no
// ref ever holds.
var syncIdentity = []string{"GIT_AUTHOR_NAME=" + SnapshotIdentity[0], "GIT_AUTHOR_EMAIL=" + SnapshotIdentity[1],
	"GIT_COMMITTER_NAME=" + SnapshotIdentity[0], "GIT_COMMITTER_EMAIL=" + SnapshotIdentity[1]}

// Sync brings group o.Group's branch up to the main checkout's HEAD, as o.How says (see above).
func (r *Repo) Sync(ctx context.Context, o SyncOptions) (Synced, error) {
	if err := api.CheckSyncHow(o.How); err != nil {
		return Synced{}, api.Errorf(api.CodeBadRequest, "sync %s: %s, not %s", o.Group, err, termsafe.QuoteMax(o.How, 40))
	}
	how := o.How
	if how == "" {
		how = SyncMerge
	}
	g, err := r.group(ctx, o.Group)
	if err != nil {
		return Synced{}, err
	}
	if g.Missing {
		return Synced{}, r.folderGone(g)
	}
	fail := func(err error) (Synced, error) { return Synced{}, fmt.Errorf("sync group %s: %w", g.Name, err) }
	if v, _, err := gitVersion(ctx); err != nil || !atLeast(v, MergeTreeGitVersion) {
		return Synced{}, api.Errorf(api.CodeUnavailable, "a sync needs git %d.%d or later (git merge-tree --write-tree), to compute the result off the checkout: install a newer git there, or merge by hand in the group's checkout",
			MergeTreeGitVersion[0], MergeTreeGitVersion[1]).WithCause(ErrGit)
	}
	ref := "refs/heads/" + g.Branch
	if out, err := git(ctx, gitRun{dir: g.Dir}, "symbolic-ref", "-q", "HEAD"); err != nil || strings.TrimSpace(string(out)) != ref {
		return Synced{}, api.Errorf(api.CodeConflict, "group %s's checkout %s is not on its branch %s (its HEAD is detached, or on another branch): check %s out there first",
			g.Name, termsafe.Quote(g.Dir), g.Branch, g.Branch).WithCause(ErrConflict)
	}
	tip, err := r.resolve(ctx, ref)
	if err != nil {
		return fail(err)
	}
	onto, err := r.resolve(ctx, "HEAD")
	if err != nil {
		return fail(err)
	}
	s := Synced{Group: g.Name, Branch: g.Branch, How: how, Onto: onto, Old: tip, New: tip}
	if out, err := git(ctx, gitRun{dir: r.Top}, "symbolic-ref", "-q", "--short", "HEAD"); err == nil {
		s.OntoName = strings.TrimSpace(string(out))
	}
	if err := r.clean(ctx, g); err != nil {
		return Synced{}, err
	}
	out, err := git(ctx, gitRun{dir: r.Top}, "merge-base", tip, onto)
	if err != nil {
		return fail(fmt.Errorf("the branch %s and HEAD have no commit in common: %w", g.Branch, err))
	}
	switch base := strings.TrimSpace(string(out)); {
	case base == onto:
		s.UpToDate = true
		return s, nil
	case base == tip:
		s.New, s.FastForward = onto, true
	case how == SyncMerge:
		tree, err := r.mergeTrees(ctx, g, s, tip, onto)
		if err != nil {
			return Synced{}, err
		}
		msg := fmt.Sprintf("Merge %s into %s", cmpOrShort(s.OntoName, onto), g.Branch)
		if s.New, err = r.commitTree(ctx, tree, msg, nil, tip, onto); err != nil {
			return fail(err)
		}
	default:
		if err := r.rebase(ctx, g, &s, onto); err != nil {
			return Synced{}, err
		}
	}
	if err := r.moveGroup(ctx, g, ref, tip, s.New, "krad-ade: sync "+g.Name+" ("+how+") onto "+short12(onto)); err != nil {
		return fail(err)
	}
	g.BaseCommit = onto // what Changes compares with from now on: the group's own work
	if err := r.writeMeta(g); err != nil {
		return s, fmt.Errorf("the sync is done, but recording the new base in group %s failed: %w", g.Name, err)
	}
	return s, nil
}

// clean refuses a group whose checkout holds uncommitted work (staged, unstaged, untracked; not
// ignored files): a sync never stashes it.
func (r *Repo) clean(ctx context.Context, g Group) error {
	paths, err := uncommitted(ctx, g.Dir)
	if err != nil {
		return fmt.Errorf("sync group %s: read its status: %w", g.Name, err)
	}
	if len(paths) == 0 {
		return nil
	}
	return api.Errorf(api.CodeConflict, "group %s has uncommitted changes (%s): commit them first (its worker, or git -C %s commit); a sync never stashes, so that nothing uncommitted is touched",
		g.Name, nameFiles(paths), termsafe.Quote(g.Dir)).WithCause(ErrConflict)
}

// uncommitted lists the files of the checkout at dir that are not committed: staged, unstaged,
// untracked (not ignored), read without writing its index.
func uncommitted(ctx context.Context, dir string) ([]string, error) {
	out, err := git(ctx, gitRun{dir: dir}, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=none")
	if err != nil {
		return nil, err
	}
	var paths []string
	fields := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		paths = append(paths, f[3:])
		if f[0] == 'R' || f[0] == 'C' {
			i++ // the rename's source
		}
	}
	return paths, nil
}

// nameFiles names files for a message: the first 20, quoted, and how many more.
func nameFiles(files []string) string {
	shown := make([]string, 0, min(len(files), 20))
	for _, f := range files[:min(len(files), 20)] {
		shown = append(shown, termsafe.Quote(f))
	}
	more := ""
	if len(files) > 20 {
		more = fmt.Sprintf(" and %d more", len(files)-20)
	}
	noun := "files"
	if len(files) == 1 {
		noun = "file"
	}
	return fmt.Sprintf("%d %s: %s%s", len(files), noun, strings.Join(shown, ", "), more)
}

// mergeTrees is the tree of merging commits ours and theirs (git merge-tree, off every
// checkout), or the conflict that says which files, and that nothing was changed.
func (r *Repo) mergeTrees(ctx context.Context, g Group, s Synced, ours, theirs string) (string, error) {
	tree, err := r.mergeTree(ctx, ours, theirs)
	var mc mergeConflict
	if !errors.As(err, &mc) {
		if err != nil {
			return "", fmt.Errorf("sync group %s: %w", g.Name, err)
		}
		return tree, nil
	}
	what := "merging " + cmpOrShort(s.OntoName, s.Onto) + " into " + g.Branch
	if s.How == SyncRebase {
		what = "rebasing " + g.Branch + "'s commit " + short12(theirs) + " onto " + cmpOrShort(s.OntoName, s.Onto)
	}
	return "", api.Errorf(api.CodeConflict, "syncing group %s conflicts: %s conflicts in %s. Nothing was changed: the group's files, index and branch are as they were. Resolve it in the group's checkout (git -C %s %s %s), or ask its worker to",
		g.Name, what, nameFiles(mc), termsafe.Quote(g.Dir), s.How, cmpOrShort(s.OntoName, s.Onto)).WithCause(ErrConflict)
}

// mergeConflict is mergeTree's error for a merge that conflicts: the files that conflict.
type mergeConflict []string

func (mc mergeConflict) Error() string { return "the merge conflicts in " + nameFiles(mc) }

// mergeTree merges commits ours and theirs off every checkout (git merge-tree --write-tree),
// and returns the merge's tree; a merge that conflicts is a mergeConflict.
func (r *Repo) mergeTree(ctx context.Context, ours, theirs string) (string, error) {
	out, err := git(ctx, gitRun{dir: r.Top}, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", ours, theirs)
	if err != nil && exitCode(err) != 1 {
		return "", err
	}
	fields := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if err != nil { // exit 1: conflicts
		return "", mergeConflict(fields[1:])
	}
	return fields[0], nil
}

// rebase replays the commits of s.Old that onto lacks onto it, off every checkout: each as git
// cherry-pick would (a three-way merge with the commit's parent as base; merge-tree is given a
// stand-in for the new base whose only parent is that parent, so that it takes it as the merge
// base, which git before 2.40 cannot be told), with the commit's author, date and message. It
// sets s.New, s.Commits and s.Dropped.
func (r *Repo) rebase(ctx context.Context, g Group, s *Synced, onto string) error {
	out, err := git(ctx, gitRun{dir: r.Top}, "rev-list", "--reverse", "--topo-order", "--parents", onto+".."+s.Old)
	if err != nil {
		return fmt.Errorf("sync group %s: list its commits: %w", g.Name, err)
	}
	cur := onto
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		ids := strings.Fields(line)
		if len(ids) != 2 {
			return api.Errorf(api.CodeBadRequest, "group %s's branch %s has merge commits (%s), which a rebase does not replay: sync with merge", g.Name, g.Branch, short12(ids[0]))
		}
		c, parent := ids[0], ids[1]
		curTree, err := r.treeOf(ctx, cur)
		if err != nil {
			return err
		}
		standIn, err := r.commitTree(ctx, curTree, "krad-ade: the new base of a rebase", syncIdentity, parent)
		if err != nil {
			return fmt.Errorf("sync group %s: %w", g.Name, err)
		}
		tree, err := r.mergeTrees(ctx, g, *s, standIn, c)
		if err != nil {
			return err
		}
		s.Commits++
		if tree == curTree {
			s.Dropped++ // onto has its changes already
			continue
		}
		info, err := git(ctx, gitRun{dir: r.Top}, "log", "-1", "--format=%an%x00%ae%x00%ad%x00%B", "--date=raw", c)
		if err != nil {
			return fmt.Errorf("sync group %s: read commit %s: %w", g.Name, short12(c), err)
		}
		f := strings.SplitN(string(info), "\x00", 4)
		if len(f) != 4 {
			return fmt.Errorf("sync group %s: read commit %s: git log printed %d fields", g.Name, short12(c), len(f))
		}
		author := []string{"GIT_AUTHOR_NAME=" + f[0], "GIT_AUTHOR_EMAIL=" + f[1], "GIT_AUTHOR_DATE=" + f[2]}
		if cur, err = r.commitTree(ctx, tree, strings.TrimRight(f[3], "\n")+"\n", author, cur); err != nil {
			return fmt.Errorf("sync group %s: %w", g.Name, err)
		}
	}
	s.New = cur
	return nil
}

// commitTree makes a commit of tree with parents and message (given on stdin, as data), env
// added to git's (an author's identity); the committer is the repository's own identity unless
// env names one.
func (r *Repo) commitTree(ctx context.Context, tree, message string, env []string, parents ...string) (string, error) {
	args := []string{"commit-tree"}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	out, err := git(ctx, gitRun{dir: r.Top, write: true, env: env, stdin: strings.NewReader(message)}, append(args, "-F", "-", tree)...)
	if err != nil {
		if strings.Contains(err.Error(), "identity") || strings.Contains(err.Error(), "empty ident") {
			return "", api.Errorf(api.CodeUnavailable, "git cannot make the commit: the repository has no identity of yours (git config user.name and user.email): set them, then sync again").WithCause(err)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// treeOf is commit's tree.
func (r *Repo) treeOf(ctx context.Context, commit string) (string, error) {
	out, err := git(ctx, gitRun{dir: r.Top}, "rev-parse", "--verify", commit+"^{tree}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// moveGroup moves the group's checkout and branch ref from old to new: its files and index
// first (refused if they would overwrite a change made meanwhile), then the branch, with its old
// value so that it refuses if the branch moved meanwhile, and the files are put back then.
func (r *Repo) moveGroup(ctx context.Context, g Group, ref, old, new, why string) error {
	if _, err := git(ctx, gitRun{dir: g.Dir, write: true}, "read-tree", "-m", "-u", old, new); err != nil {
		if strings.Contains(err.Error(), "overwritten") || strings.Contains(err.Error(), "not uptodate") {
			return api.Errorf(api.CodeConflict, "files of group %s changed while it was synced: nothing was changed; sync again once its worker has committed", g.Name).WithCause(ErrConflict)
		}
		return err
	}
	if _, err := git(ctx, gitRun{dir: r.Top, write: true}, "update-ref", "-m", why, ref, new, old); err != nil {
		undo, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
		_, uerr := git(undo, gitRun{dir: g.Dir, write: true}, "read-tree", "-m", "-u", new, old)
		cancel()
		if uerr != nil {
			return fmt.Errorf("%w; and putting the checkout's files back failed: %v: look at %s", err, uerr, termsafe.Quote(g.Dir))
		}
		return fmt.Errorf("the branch %s moved while it was synced, and nothing was changed: %w", g.Branch, err)
	}
	return nil
}

// cmpOrShort is name, or when it is "" the commit's short hash.
func cmpOrShort(name, commit string) string {
	if name != "" {
		return name
	}
	return short12(commit)
}

func short12(hash string) string { return hash[:min(len(hash), 12)] }
