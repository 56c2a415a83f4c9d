package worktree

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// A variant set is one task run several ways: groups <set>-1 … <set>-N, all from one base
// commit, each record naming the set and the lead that ran it (Group.Set, Group.Lead), so that
// the set survives restarts with its groups. Pick takes one variant's work into the main
// checkout computed off every checkout, and touches nothing when it cannot.

// SetOptions are what OpCreateSet makes: Count groups (at most api.MaxVariants) from Base (""
// the main checkout's HEAD), for the lead named Lead ("main:1").
type SetOptions struct {
	Count int    `json:"count"`
	Base  string `json:"base,omitempty"`
	Lead  string `json:"lead"`
	// Env is the environment the set's groups are for (Group.Env); an Op's Env.
	Env string `json:"-"`
}

// Set is a variant set that OpCreateSet made.
type Set struct {
	Name       string  `json:"name"`
	BaseCommit string  `json:"base_commit"`
	Groups     []Group `json:"groups"`
}

// PickOptions are what OpPick takes: the winner, how (api.PickSquash, …), and the commit's
// message for squash and merge ("" makes one).
type PickOptions struct {
	Group   string `json:"group"`
	How     string `json:"how"`
	Message string `json:"message,omitempty"`
}

// Pick is what OpPick did.
type Pick struct {
	// Commit is the commit made on Branch (squash, merge); "" for apply and branch.
	Commit string `json:"commit,omitempty"`
	// Branch is the main checkout's branch (squash, merge), or the winner's (branch).
	Branch string `json:"branch,omitempty"`
	// Snapshot is the commit of the winner's whole state, on refs/krad/snapshots/<group>.
	Snapshot string `json:"snapshot"`
}

// MergeTreeGitVersion is the oldest git that computes a merge off every checkout (git merge-tree
// --write-tree), which picks need.
var MergeTreeGitVersion = [2]int{2, 38}

// CreateSet makes a variant set: its name from hint, then its groups, all from one base commit,
// all or nothing: a failure (ctx ended included) retires those made, which held nothing.
func (r *Repo) CreateSet(ctx context.Context, hint, root string, o SetOptions) (Set, error) {
	if o.Count < 1 || o.Count > api.MaxVariants {
		return Set{}, api.Errorf(api.CodeBadRequest, "%d variants: a set has 1 to %d", o.Count, api.MaxVariants)
	}
	base := o.Base
	if base == "" {
		base = "HEAD"
	} else if err := ValidRef("base", base); err != nil {
		return Set{}, err
	}
	commit, err := r.resolve(ctx, base)
	if errors.Is(err, ErrNotFound) {
		if o.Base == "" {
			return Set{}, api.Errorf(api.CodeConflict, "the repository %s has no commits yet, so a set has nothing to start from: commit first", termsafe.Quote(r.Top)).WithCause(ErrNoCommits)
		}
		return Set{}, noBase(o.Base, err)
	} else if err != nil {
		return Set{}, fmt.Errorf("make a variant set: %w", err)
	}
	stem := NameFrom(hint)
	if len(stem) > MaxNameLen-4 { // room for -N and a -NN of the set's own
		stem = strings.TrimRight(stem[:MaxNameLen-4], "-")
	}
	groups, err := r.Groups(ctx)
	if err != nil {
		return Set{}, fmt.Errorf("make a variant set: %w", err)
	}
	for i := 1; i <= maxPicks; i++ {
		name := stem
		if i > 1 {
			name = stem + "-" + strconv.Itoa(i)
		}
		if len(name)+2 > MaxNameLen || setTaken(groups, name) {
			continue
		}
		set, err := r.createSet(ctx, name, commit, root, o)
		if errors.Is(err, ErrConflict) && set.Name == "" {
			continue // a branch or folder of that set's is there: the next name
		}
		return set, err
	}
	return Set{}, conflict("variant sets %s to %s-%d are all taken: give the task another title", stem, stem, maxPicks)
}

// setTaken says whether a group of groups is of set name, or is named as one of its variants.
func setTaken(groups []Group, name string) bool {
	for _, g := range groups {
		if g.Set == name || strings.HasPrefix(g.Name, name+"-") {
			return true
		}
	}
	return false
}

// createSet makes set name's groups; on a conflict with the first (a kept branch of that name,
// say) it answers the conflict with an empty Set, for CreateSet to try the next name.
func (r *Repo) createSet(ctx context.Context, name, commit, root string, o SetOptions) (set Set, err error) {
	set = Set{Name: name, BaseCommit: commit}
	failed := -1 // the group whose failure stopped the set
	defer func() {
		if err == nil {
			return
		}
		undo, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout*3)
		defer cancel()
		for _, g := range set.Groups {
			if _, rerr := r.Retire(undo, g.Name); rerr != nil {
				err = fmt.Errorf("%w; and undoing group %s failed: %v", err, g.Name, rerr)
			}
		}
		if errors.Is(err, ErrConflict) && failed == 0 {
			set.Name = ""
		}
		set.Groups = nil
	}()
	// The groups are made side by side (their checkouts, which are what takes the time, a few
	// at a time: Create's checkout slots); the first failure stops the others, and every group
	// made is undone above.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		made  = make([]Group, o.Count)
		once  sync.Once
		first error // the failure that stopped the others, not theirs of being stopped
		wg    sync.WaitGroup
	)
	fail := func(i int, err error) { once.Do(func() { failed, first = i, err; cancel() }) }
	for i := range o.Count {
		wg.Go(func() {
			g, err := r.Create(ctx, CreateOptions{Name: name + "-" + strconv.Itoa(i+1), Base: commit, Root: root, Env: o.Env})
			if err == nil {
				g.Set, g.Lead = name, o.Lead
				g.Joined = true // its worker starts once the set is made
				made[i] = g
				if err = r.writeMeta(g); err != nil {
					err = fmt.Errorf("make variant %s: %w", g.Name, err)
				}
			}
			if err != nil {
				fail(i, err)
			}
		})
	}
	wg.Wait()
	for _, g := range made {
		if g.Name != "" {
			set.Groups = append(set.Groups, g)
		}
	}
	return set, first
}

// writeMeta writes g's record again, with what changed in it since Create (its set, its pick).
func (r *Repo) writeMeta(g Group) error {
	if g.admin == "" {
		return fmt.Errorf("group %s has no admin folder known", g.Name)
	}
	return writeRecord(g.admin, meta{Name: g.Name, Branch: g.Branch, BaseCommit: g.BaseCommit, MadeBranch: g.MadeBranch, Port: g.Port,
		Created: g.Created, Set: g.Set, Lead: g.Lead, Picked: g.Picked, Joined: g.Joined, Env: g.Env, Held: g.Held})
}

// CheckVariant refuses a group that is of no variant set: a pick takes a variant. The one rule of
// it, which the app applies to PickVariant and Pick to a pick operation.
func CheckVariant(g Group) error {
	if g.Set == "" {
		return api.Errorf(api.CodeBadRequest, "group %s is of no variant set, and a pick takes a variant of a set the lead ran (krad variants run): take a plain group's work with git (its branch %s), or see it with krad changes --group %s",
			g.Name, termsafe.Escape(g.Branch, 200), g.Name)
	}
	return nil
}

// Pick takes the winner's work as o.How says, computed off every checkout (git merge-tree, a
// temporary index): first its whole state is kept as a snapshot commit; a merge that conflicts
// changes nothing and names the files; staged changes in the main checkout refuse the pick
// (no autostash), and so does anything of the main checkout's that the pick would write over
// (overwrites: changes not committed, an ignored or untracked file, a folder or a symbolic link
// in the way), named.
func (r *Repo) Pick(ctx context.Context, o PickOptions) (Pick, error) {
	g, err := r.group(ctx, o.Group)
	if err != nil {
		return Pick{}, err
	}
	if err := CheckVariant(g); err != nil {
		return Pick{}, err
	}
	if g.Missing {
		return Pick{}, r.folderGone(g)
	}
	how := o.How
	if how == "" {
		how = api.PickSquash
	}
	fail := func(err error) (Pick, error) { return Pick{}, pickFailed(o.Group, err) }
	if how == api.PickSquash || how == api.PickMerge {
		if err := r.checkIdentity(ctx, g.Name, how); err != nil {
			return Pick{}, err
		}
	}

	// 1. Keep the winner's whole state: the snapshot is what is picked.
	state, err := r.keepWork(ctx, g, "krad-ade: the work of variant "+g.Name+" when it was picked")
	if err != nil {
		return fail(err)
	}
	p := Pick{Snapshot: state}
	if how == api.PickBranch {
		p.Branch = g.Branch
		return p, r.markPicked(g, how, "")
	}

	// 2. The main checkout: on a branch (squash, merge), nothing staged.
	head, branch, err := r.pickOnto(ctx, o.Group, how)
	if err != nil {
		return Pick{}, err
	}

	// 3. The result, off every checkout.
	tree, err := r.pickTree(ctx, g, head, state, branch)
	if err != nil {
		return Pick{}, err
	}

	// 4. Into the main checkout, over nothing of the person's: git would replace an ignored
	// file, a symbolic link or a folder in the way (overwrite.go).
	if found, err := overwrites(ctx, r.Top, head, tree); err != nil {
		return fail(err)
	} else if len(found) > 0 {
		return Pick{}, overwriteConflict("the pick of variant "+g.Name, "the main checkout "+termsafe.Quote(r.Top), found,
			fmt.Sprintf("Move them out of the way (or commit them), then pick again; or pick with how=branch and take its work by hand (its branch %s)", g.Branch))
	}
	if how == api.PickApply {
		if _, err := git(ctx, gitRun{dir: r.Top, write: true}, "read-tree", "-m", "-u", "HEAD", tree); err != nil {
			return fail(wouldOverwrite(err, r.Top))
		}
		return p, r.markPicked(g, how, "")
	}
	msg := o.Message
	if msg == "" {
		msg = fmt.Sprintf("%s: variant %s", g.Set, g.Name)
		if g.Set == "" {
			msg = "group " + g.Name
		}
	}
	parents := []string{head}
	if how == api.PickMerge {
		parents = append(parents, state)
	}
	commit, err := r.commitPick(ctx, g.Name, msg, parents, tree, branch)
	if err != nil {
		return fail(err)
	}
	p.Commit, p.Branch = commit, strings.TrimPrefix(branch, "refs/heads/")
	return p, r.markPicked(g, how, commit)
}

// pickFailed is the error of the pick of group that failed for err.
func pickFailed(group string, err error) error { return fmt.Errorf("pick %s: %w", group, err) }

// pickOnto checks the main checkout for a pick of group as how says: git can compute it
// (merge-tree), the checkout is on a branch unless how is apply, and nothing is staged in it. It
// returns the checkout's HEAD commit and its branch ("" on a detached HEAD).
func (r *Repo) pickOnto(ctx context.Context, group, how string) (head, branch string, err error) {
	if v, _, err := gitVersion(ctx); err != nil || !atLeast(v, MergeTreeGitVersion) {
		return "", "", api.Errorf(api.CodeUnavailable, "picking %s needs git %d.%d or later (git merge-tree --write-tree): install a newer git, or pick with how=branch",
			how, MergeTreeGitVersion[0], MergeTreeGitVersion[1]).WithCause(ErrGit)
	}
	head, err = r.resolve(ctx, "HEAD")
	if err != nil {
		return "", "", pickFailed(group, err)
	}
	if out, err := git(ctx, gitRun{dir: r.Top}, "symbolic-ref", "-q", "HEAD"); err == nil {
		branch = strings.TrimSpace(string(out))
	} else if exitCode(err) != 1 {
		return "", "", pickFailed(group, err)
	}
	if branch == "" && how != api.PickApply {
		return "", "", api.Errorf(api.CodeConflict, "the main checkout %s is on a detached HEAD, where a %s has no branch to go on: check out a branch there first, or pick with how=apply or branch",
			termsafe.Quote(r.Top), how)
	}
	if _, err := git(ctx, gitRun{dir: r.Top}, "diff-index", "--cached", "--quiet", "HEAD", "--"); err != nil {
		if exitCode(err) == 1 {
			return "", "", api.Errorf(api.CodeConflict, "the main checkout %s has staged changes: commit or unstage them first (a pick never stashes)", termsafe.Quote(r.Top))
		}
		return "", "", pickFailed(group, err)
	}
	return head, branch, nil
}

// pickTree is the tree of the pick of variant g's state onto head, computed off every checkout
// (git merge-tree); a merge that conflicts is a conflict that names the files, and changes
// nothing.
func (r *Repo) pickTree(ctx context.Context, g Group, head, state, branch string) (string, error) {
	tree, err := r.mergeTree(ctx, head, state)
	var mc mergeConflict
	if !errors.As(err, &mc) {
		if err != nil {
			return "", pickFailed(g.Name, err)
		}
		return tree, nil
	}
	return "", api.Errorf(api.CodeConflict, "variant %s conflicts with %s in %s; nothing was changed. Ask its worker to rebase onto it, or take its work by hand (its branch %s, its snapshot %s)",
		g.Name, shortBranch(branch, "HEAD"), nameFiles(mc), g.Branch, SnapshotPrefix+g.Name).WithCause(ErrConflict)
}

// commitPick commits tree with msg on parents, then puts it in the main checkout on branch, whose
// HEAD is parents[0]: the files first (refused if they would overwrite unstaged changes), then the
// branch, with its old value so that it refuses if the branch moved meanwhile; the files are put
// back if that fails.
func (r *Repo) commitPick(ctx context.Context, group, msg string, parents []string, tree, branch string) (string, error) {
	head := parents[0]
	args := []string{"commit-tree", "-m", msg}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	cout, err := git(ctx, gitRun{dir: r.Top, write: true}, append(args, tree)...)
	if err != nil {
		return "", err
	}
	commit := strings.TrimSpace(string(cout))
	if _, err := git(ctx, gitRun{dir: r.Top, write: true}, "read-tree", "-m", "-u", "HEAD", commit); err != nil {
		return "", wouldOverwrite(err, r.Top)
	}
	if _, err := git(ctx, gitRun{dir: r.Top, write: true}, "update-ref", "-m", "krad-ade: pick "+group, branch, commit, head); err != nil {
		undo, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
		_, uerr := git(undo, gitRun{dir: r.Top, write: true}, "read-tree", "-m", "-u", commit, "HEAD")
		cancel()
		if uerr != nil {
			return "", fmt.Errorf("%w; and putting the checkout's files back failed: %v: look at %s", err, uerr, termsafe.Quote(r.Top))
		}
		return "", err
	}
	return commit, nil
}

// checkIdentity refuses a pick that makes the person's commit (squash, merge) in a repository
// where git knows no one to make it as: no user.name or user.email in its config or the global
// one (and no EMAIL, or a guess from the user's and the host's names that git takes, unless
// user.useConfigOnly forbids it). git var asks git exactly what commit-tree would, before
// anything is done. The snapshot, which is the app's commit, has an identity of its own
// (SnapshotIdentity); the pick's commit is the person's, so it takes theirs.
func (r *Repo) checkIdentity(ctx context.Context, group, how string) error {
	for _, v := range []string{"GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"} {
		_, err := git(ctx, gitRun{dir: r.Top}, "var", v)
		if err == nil {
			continue
		}
		var ge *GitError
		if ctx.Err() != nil || !errors.As(err, &ge) || ge.ExitCode != 128 {
			return fmt.Errorf("pick %s: ask git who commits: %w", group, err)
		}
		why := ge.Stderr // git's last line says why ("fatal: unable to auto-detect email address …")
		if i := strings.LastIndex(why, `\n`); i >= 0 {
			why = why[i+2:]
		}
		return api.Errorf(api.CodeConflict, "a %s makes a commit in %s, and git there has no identity to make it with: user.name or user.email is not set (git: %s); nothing was changed. Set them where the repository is (git config user.email you@example.com and git config user.name 'Your Name', with --global for every repository), then pick again; or pick with how=apply, which commits nothing",
			how, termsafe.Quote(r.Top), why).WithCause(ErrNoIdentity).WithReason(api.ReasonNoIdentity)
	}
	return nil
}

// markPicked records in the winner's record that it was picked, and into what: squash-picked
// work is known as picked from this, never judged by ancestry.
func (r *Repo) markPicked(g Group, how, commit string) error {
	g.Picked = how
	if commit != "" {
		g.Picked += " " + commit
	}
	if err := r.writeMeta(g); err != nil {
		return fmt.Errorf("the pick is done, but recording it in group %s failed: %w", g.Name, err)
	}
	return nil
}

// wouldOverwrite explains read-tree refusing to overwrite files of the main checkout: ones that
// came or changed after overwrites looked (git refuses before it writes anything).
func wouldOverwrite(err error, top string) error {
	var ge *GitError
	if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "overwritten") || strings.Contains(ge.Stderr, "not uptodate") || strings.Contains(ge.Stderr, "lose untracked")) {
		return api.Errorf(api.CodeConflict, "the pick would overwrite files in the main checkout %s that changed while it ran (git: %s); nothing was changed: pick again",
			termsafe.Quote(top), ge.Stderr).WithCause(ErrConflict).WithReason(api.ReasonInTheWay)
	}
	return err
}

func shortBranch(ref, otherwise string) string {
	if ref == "" {
		return otherwise
	}
	return strings.TrimPrefix(ref, "refs/heads/")
}

// atLeast says whether version v is at least min.
func atLeast(v, min [2]int) bool { return v[0] > min[0] || v[0] == min[0] && v[1] >= min[1] }
