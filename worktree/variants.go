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
		return Set{}, api.Errorf(api.CodeNotFound, "base %s is no commit of the repository", termsafe.QuoteMax(o.Base, 60)).WithCause(ErrNotFound)
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
// (no autostash), and so do unstaged ones the pick would overwrite.
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
	fail := func(err error) (Pick, error) { return Pick{}, fmt.Errorf("pick %s: %w", o.Group, err) }

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
	if v, _, err := gitVersion(ctx); err != nil || !atLeast(v, MergeTreeGitVersion) {
		return Pick{}, api.Errorf(api.CodeUnavailable, "picking %s needs git %d.%d or later (git merge-tree --write-tree): install a newer git, or pick with how=branch",
			how, MergeTreeGitVersion[0], MergeTreeGitVersion[1]).WithCause(ErrGit)
	}
	head, err := r.resolve(ctx, "HEAD")
	if err != nil {
		return fail(err)
	}
	branch := ""
	if out, err := git(ctx, gitRun{dir: r.Top}, "symbolic-ref", "-q", "HEAD"); err == nil {
		branch = strings.TrimSpace(string(out))
	} else if exitCode(err) != 1 {
		return fail(err)
	}
	if branch == "" && how != api.PickApply {
		return Pick{}, api.Errorf(api.CodeConflict, "the main checkout %s is on a detached HEAD, where a %s has no branch to go on: check out a branch there first, or pick with how=apply or branch",
			termsafe.Quote(r.Top), how)
	}
	if _, err := git(ctx, gitRun{dir: r.Top}, "diff-index", "--cached", "--quiet", "HEAD", "--"); err != nil {
		if exitCode(err) == 1 {
			return Pick{}, api.Errorf(api.CodeConflict, "the main checkout %s has staged changes: commit or unstage them first (a pick never stashes)", termsafe.Quote(r.Top))
		}
		return fail(err)
	}

	// 3. The result, off every checkout.
	out, err := git(ctx, gitRun{dir: r.Top}, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", head, state)
	if err != nil && exitCode(err) != 1 {
		return fail(err)
	}
	fields := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	tree := fields[0]
	if err != nil { // exit 1: conflicts
		files := fields[1:]
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
		return Pick{}, api.Errorf(api.CodeConflict, "variant %s conflicts with %s in %d %s: %s%s; nothing was changed. Ask its worker to rebase onto it, or take its work by hand (its branch %s, its snapshot %s)",
			o.Group, shortBranch(branch, "HEAD"), len(files), noun, strings.Join(shown, ", "), more, g.Branch, SnapshotPrefix+g.Name).WithCause(ErrConflict)
	}

	// 4. Into the main checkout.
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
	args := []string{"commit-tree", "-m", msg, "-p", head}
	if how == api.PickMerge {
		args = append(args, "-p", state)
	}
	cout, err := git(ctx, gitRun{dir: r.Top, write: true}, append(args, tree)...)
	if err != nil {
		return fail(err)
	}
	commit := strings.TrimSpace(string(cout))
	// The files first (refused if they would overwrite unstaged changes), then the branch, with
	// its old value so that it refuses if the branch moved meanwhile; undone if that fails.
	if _, err := git(ctx, gitRun{dir: r.Top, write: true}, "read-tree", "-m", "-u", "HEAD", commit); err != nil {
		return fail(wouldOverwrite(err, r.Top))
	}
	if _, err := git(ctx, gitRun{dir: r.Top, write: true}, "update-ref", "-m", "krad-ade: pick "+g.Name, branch, commit, head); err != nil {
		undo, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
		_, uerr := git(undo, gitRun{dir: r.Top, write: true}, "read-tree", "-m", "-u", commit, "HEAD")
		cancel()
		if uerr != nil {
			return fail(fmt.Errorf("%w; and putting the checkout's files back failed: %v: look at %s", err, uerr, termsafe.Quote(r.Top)))
		}
		return fail(err)
	}
	p.Commit, p.Branch = commit, strings.TrimPrefix(branch, "refs/heads/")
	return p, r.markPicked(g, how, commit)
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

// wouldOverwrite explains read-tree refusing to overwrite the main checkout's own changes.
func wouldOverwrite(err error, top string) error {
	if strings.Contains(err.Error(), "overwritten") || strings.Contains(err.Error(), "not uptodate") {
		return api.Errorf(api.CodeConflict, "the pick would overwrite changes in the main checkout %s that are not committed: commit or move them first; nothing was changed",
			termsafe.Quote(top)).WithCause(ErrConflict)
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
