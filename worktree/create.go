package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/atomicfile"
	"github.com/krad-ade/krad/internal/termsafe"
)

// CreateOptions are what [Repo.Create] makes a group of.
type CreateOptions struct {
	// Name is the group's name ([ValidName]). Required: the app picks one when a person does
	// not.
	Name string
	// Base is the commit the group starts from, as git names commits (main, HEAD~2, v1.0, a
	// hash). "": the main checkout's HEAD, or, with Branch, where Branch and that HEAD meet.
	Base string
	// Branch, when set, is an existing branch to continue (one kept by a retired group, say)
	// instead of making krad/<Name>. The app never deletes a branch it did not make. A branch
	// krad/<old> whose retired group left a snapshot on top of it comes back with that
	// snapshot's work as uncommitted changes.
	Branch string
	// Root is the folder that holds every repository's groups, absolute:
	// $XDG_DATA_HOME/krad-ade/worktrees on this computer. The group's checkout is
	// Root/<repo-key>/<Name>.
	Root string
	// Env is the environment the group is for (Group.Env); an Op's Env.
	Env string `json:"-"`

	// joined records in the new group that a terminal joins it (Group.Joined): an Op's Join.
	joined bool
}

// createStep, when set by a test, is called after each step of Create: "branch" (made, or
// checked when continued), "worktree" (its admin folder and the group's record), "checkout",
// "restored" (a continued branch's snapshot looked for and put back), "included" (the ignored
// files IncludeFile and the config name copied).
var createStep func(step string)

// Create makes a group: its branch, from its base resolved once to a commit, checked out in a new
// locked worktree at Root/<repo-key>/<Name>, and what the app must remember in the worktree's
// admin folder.
//
// An existing group, branch or folder of that name is a conflict (*api.Error, wrapping
// [ErrConflict]) that says what holds it, and nothing is touched. The main checkout is never
// touched either: its uncommitted edits stay there and are not carried into the group. A failure
// midway, ctx cancelled included, undoes what was done: no worktree, admin entry, branch or folder
// is left.
func (r *Repo) Create(ctx context.Context, o CreateOptions) (g Group, err error) {
	if err := o.valid(); err != nil {
		return Group{}, err
	}
	c := &creation{r: r, o: o,
		// git keeps a worktree's path with its symlinks resolved; so does dir, to compare with it.
		dir: realPath(filepath.Join(o.Root, r.Key, o.Name))}
	wts, err := c.nameFree(ctx)
	if err != nil {
		return Group{}, err
	}
	head, err := c.head(ctx)
	if err != nil {
		return Group{}, err
	}
	if err := c.pickBranch(ctx, wts); err != nil {
		return Group{}, err
	}
	if err := c.pickBase(ctx, head); err != nil {
		return Group{}, err
	}

	// From here on, what is made is undone if anything fails, ctx cancelled included.
	defer func() {
		if err == nil {
			return
		}
		if rbErr := c.rollback(ctx); rbErr != nil {
			err = fmt.Errorf("%w; and undoing it failed: %v: look at %s and branch %s", err, rbErr, termsafe.Quote(c.dir), c.branch)
		}
		g = Group{}
	}()
	if err := c.makeFolder(); err != nil {
		return Group{}, err
	}
	if err := c.makeBranch(ctx); err != nil {
		return Group{}, err
	}
	step("branch")
	if err := ctx.Err(); err != nil {
		return Group{}, c.fail(err)
	}
	m, admin, err := c.add(ctx)
	if err != nil {
		return Group{}, err
	}
	step("worktree")
	if err := c.checkout(ctx); err != nil {
		return Group{}, err
	}
	step("checkout")
	restored := ""
	if !c.made {
		if restored, err = r.restoreSnapshot(ctx, c.dir, c.branch, c.tip); err != nil {
			return Group{}, c.fail(err)
		}
		step("restored")
	}
	included, setup, err := c.include(ctx, admin)
	if err != nil {
		return Group{}, err
	}
	step("included")
	if err := ctx.Err(); err != nil {
		return Group{}, c.fail(err)
	}
	tip := c.tip
	if c.made {
		tip = c.base
	}
	return Group{Name: o.Name, Dir: c.dir, Branch: c.branch, BaseCommit: c.base, MadeBranch: c.made, Head: tip,
		Locked: true, Port: m.Port, Created: m.Created, Restored: restored, Joined: m.Joined, Env: m.Env, Included: included, Setup: setup, admin: admin}, nil
}

// valid checks the options' names and root, before anything is looked at.
func (o CreateOptions) valid() error {
	if err := ValidName(o.Name); err != nil {
		return err
	}
	if o.Base != "" {
		if err := ValidRef("base", o.Base); err != nil {
			return err
		}
	}
	if o.Branch != "" {
		if err := ValidRef("branch", o.Branch); err != nil {
			return err
		}
	}
	if !filepath.IsAbs(o.Root) {
		return fmt.Errorf("create group %s: the worktrees root %s is not an absolute path", o.Name, termsafe.Quote(o.Root))
	}
	return nil
}

// creation is one Create under way: the group it makes, and which of its parts are made so far,
// for rollback to undo.
type creation struct {
	r   *Repo
	o   CreateOptions
	dir string // the checkout's folder, its symlinks resolved
	// branch is the group's branch: krad/<Name>, which this Create makes (made), or
	// CreateOptions.Branch continued, whose commit is tip.
	branch string
	made   bool
	tip    string
	base   string // the commit a made branch starts from

	madeRoot, madeDir, madeBranch bool
}

// nameFree checks that nothing holds the group's name: a group, a worktree at its folder, the
// folder. It returns the repository's worktrees.
func (c *creation) nameFree(ctx context.Context) ([]worktree, error) {
	o, dir := c.o, c.dir
	wts, err := c.r.worktrees(ctx)
	if err != nil {
		return nil, fmt.Errorf("create group %s: %w", o.Name, err)
	}
	groups, err := c.r.groupsOf(wts)
	if err != nil {
		return nil, fmt.Errorf("create group %s: list groups: %w", o.Name, err)
	}
	for _, g := range groups {
		switch {
		case g.Name != o.Name:
		case g.Damaged != "":
			return nil, conflict("group %s exists, and %s", o.Name, g.Damaged)
		default:
			return nil, conflict("group %s exists (branch %s, checkout %s): use it, or retire it first", o.Name, g.Branch, termsafe.Quote(g.Dir))
		}
	}
	for _, wt := range wts {
		if wt.path == dir {
			return nil, conflict("folder %s is a worktree of the repository already: remove it (git worktree remove) or pick another name", termsafe.Quote(dir))
		}
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil, conflict("folder %s exists: move it away or pick another name", termsafe.Quote(dir))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("create group %s: %w", o.Name, err)
	}
	return wts, nil
}

// head is the main checkout's HEAD commit: a conflict (ErrNoCommits) when there is none yet.
func (c *creation) head(ctx context.Context) (string, error) {
	head, err := c.r.resolve(ctx, "HEAD")
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return "", api.Errorf(api.CodeConflict,
				"the repository %s has no commits yet, so a group has nothing to start from: commit first", termsafe.Quote(c.r.Top)).WithCause(ErrNoCommits)
		}
		return "", fmt.Errorf("create group %s: %w", c.o.Name, err)
	}
	return head, nil
}

// pickBranch sets the group's branch: krad/<Name>, which must not exist yet, or the branch to
// continue, which must exist and be checked out in none of the worktrees wts.
func (c *creation) pickBranch(ctx context.Context, wts []worktree) error {
	r, o := c.r, c.o
	if o.Branch == "" {
		branch := BranchPrefix + o.Name
		c.branch, c.made = branch, true
		if _, err := r.resolve(ctx, "refs/heads/"+branch); err == nil {
			return conflict("branch %s exists (kept from an earlier group?): continue it with branch %s, or delete it (git branch -D %s)", branch, branch, branch)
		} else if !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("create group %s: %w", o.Name, err)
		}
		return nil
	}
	branch := o.Branch
	c.branch = branch
	if _, err := git(ctx, gitRun{dir: r.Top}, "check-ref-format", "refs/heads/"+branch); err != nil {
		return badInput(fmt.Sprintf("branch %s: git does not take it as a branch name", termsafe.QuoteMax(branch, 60)))
	}
	tip, err := r.resolve(ctx, "refs/heads/"+branch)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return api.Errorf(api.CodeNotFound, "no branch %s in the repository: see git branch", termsafe.QuoteMax(branch, 60)).WithCause(ErrNotFound)
		}
		return fmt.Errorf("create group %s: %w", o.Name, err)
	}
	c.tip = tip
	for _, wt := range wts {
		if wt.branch == "refs/heads/"+branch {
			return conflict("branch %s is checked out in %s: a branch can be checked out in one worktree only", termsafe.QuoteMax(branch, 60), termsafe.Quote(wt.path))
		}
	}
	return nil
}

// pickBase sets the group's base: CreateOptions.Base, or where a continued branch and head meet,
// or head.
func (c *creation) pickBase(ctx context.Context, head string) error {
	r, o := c.r, c.o
	c.base = head
	switch {
	case o.Base != "":
		base, err := r.resolve(ctx, o.Base)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return noBase(o.Base, err)
			}
			return fmt.Errorf("create group %s: %w", o.Name, err)
		}
		c.base = base
	case !c.made:
		out, err := git(ctx, gitRun{dir: r.Top}, "merge-base", head, "refs/heads/"+c.branch)
		if err != nil {
			return fmt.Errorf("create group %s: branch %s has no commit in common with HEAD: give a base: %w", o.Name, termsafe.QuoteMax(c.branch, 60), err)
		}
		c.base = strings.TrimSpace(string(out))
	}
	return nil
}

// fail is the error of a step that failed once the making began: one that says what to free
// when a disk is full.
func (c *creation) fail(err error) error {
	if diskFull(err) {
		return api.Errorf(api.CodeUnavailable,
			"create group %s: a disk is full (%s): free space on the disk that holds the worktrees root %s or the repository %s, or move the worktrees root to a disk with room for a whole checkout (on this computer, config.toml's key worktrees); then try again",
			c.o.Name, termsafe.Shorten(err.Error(), 400), termsafe.Quote(c.o.Root), termsafe.Quote(c.r.CommonDir)).WithCause(errors.Join(ErrDiskFull, err))
	}
	return fmt.Errorf("create group %s: %w", c.o.Name, err)
}

// failRoom is fail for a git command that writes into the checkout: when git did not say that a
// disk is full, noRoomFor tells whether the checkout would have fit.
func (c *creation) failRoom(ctx context.Context, err error) error {
	if !diskFull(err) && ctx.Err() == nil {
		if full := c.r.noRoomFor(ctx, "refs/heads/"+c.branch, filepath.Dir(c.dir)); full != nil {
			err = fmt.Errorf("%w (%w)", err, full)
		}
	}
	return c.fail(err)
}

// makeFolder makes the group's folder, and the repository's folder of groups under Root when
// there is none yet.
func (c *creation) makeFolder() error {
	keyDir := filepath.Dir(c.dir)
	if _, err := os.Stat(keyDir); errors.Is(err, fs.ErrNotExist) {
		c.madeRoot = true
	}
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return c.fail(err)
	}
	// The folder is made here, and must not exist: then it, and the admin entry git makes for
	// it, are this call's alone, and undoing removes nothing of anyone else's (a Create of the
	// same name running at the same time, say).
	if err := os.Mkdir(c.dir, 0o777); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return conflict("folder %s was made by someone else just now", termsafe.Quote(c.dir))
		}
		return c.fail(err)
	}
	c.madeDir = true
	return nil
}

// makeBranch makes the group's own branch at its base; a continued branch is left as it is.
func (c *creation) makeBranch(ctx context.Context) error {
	if !c.made {
		return nil
	}
	c.madeBranch = true // even if update-ref fails: the delete in rollback checks the old value
	if _, err := git(ctx, gitRun{dir: c.r.Top, write: true}, "update-ref", "-m", "krad-ade: group "+c.o.Name, "refs/heads/"+c.branch, c.base, ""); err != nil {
		if ctx.Err() == nil && strings.Contains(err.Error(), "exists") {
			c.madeBranch = false
			return conflict("branch %s was made by someone else just now", c.branch)
		}
		return c.fail(err)
	}
	return nil
}

// add adds the group's worktree and its record (addLocked), under the repository's admin lock:
// what git must not do twice at once (the worktree's admin folder: two adds at once can meet
// each other's half-made one), and the group's record with its port block (Creates running at
// once list each other's records, and take different blocks). The checkout, which is what takes
// the time (seconds for a tree of ten thousand files, most of it the kernel's), runs after the
// lock, as git worktree add itself runs it: so the Creates of a variant set check out side by
// side.
func (c *creation) add(ctx context.Context) (meta, string, error) {
	unlock, err := c.r.lockAdmin(ctx)
	if err != nil {
		return meta{}, "", c.fail(fmt.Errorf("lock the repository's worktrees: %w", err))
	}
	m, admin, err := c.r.addLocked(ctx, c.o, c.dir, c.branch, c.base, c.made)
	unlock()
	if err != nil {
		return meta{}, "", c.failRoom(ctx, err)
	}
	return m, admin, nil
}

// checkout writes the group's files, in one of the repository's few checkout slots: a set's
// eight checkouts at once thrash where a few at a time do not.
func (c *creation) checkout(ctx context.Context) error {
	release, err := c.r.checkoutSlot(ctx)
	if err != nil {
		return c.fail(fmt.Errorf("wait for a checkout of the repository: %w", err))
	}
	_, err = git(ctx, gitRun{dir: c.dir, write: true}, "reset", "--hard", "--quiet", "--no-recurse-submodules")
	release()
	if err != nil {
		return c.failRoom(ctx, err)
	}
	return nil
}

// include gives the checkout what the person's config and the repository's IncludeFile say it
// gets, and records the group's setup in its admin folder.
func (c *creation) include(ctx context.Context, admin string) (*Included, *Setup, error) {
	rule, err := c.r.setupRule(ctx)
	if err != nil {
		return nil, nil, c.fail(err)
	}
	var patterns []string
	if rule != nil {
		patterns = rule.Include
	}
	included, err := c.r.include(ctx, c.dir, patterns)
	if err != nil {
		return nil, nil, c.fail(err)
	}
	setup := newSetup(rule)
	if setup != nil {
		if err := writeSetup(admin, setup); err != nil {
			return nil, nil, c.fail(fmt.Errorf("record the group's setup: %w", err))
		}
	}
	return included, setup, nil
}

// writeRecord writes a group's record into its worktree's admin folder, beside git's own data
// there, and as git writes that: whole, but not synced (a sync waits for every file written
// before it, the checkouts of the groups being made at once included).
func writeRecord(admin string, m meta) error {
	data, _ := json.Marshal(m)
	return atomicfile.WriteFileUnsynced(filepath.Join(admin, metaFile), append(data, '\n'), 0o600)
}

// addLocked adds the group's worktree (its admin folder, locked, no checkout yet) and writes its
// record; the repository's admin lock must be held.
func (r *Repo) addLocked(ctx context.Context, o CreateOptions, dir, branch, base string, made bool) (meta, string, error) {
	if _, err := git(ctx, gitRun{dir: r.Top, write: true}, "worktree", "add", "--quiet", "--no-checkout", "--lock", "--reason", lockReason(o.Name), "--", dir, branch); err != nil {
		return meta{}, "", err
	}
	out, err := git(ctx, gitRun{dir: dir}, "rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return meta{}, "", err
	}
	admin := strings.TrimSpace(string(out))
	// A mark that a Retire of an earlier group of this name was killed midway is no one's now.
	if err := os.Remove(r.retiringMark(o.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return meta{}, "", err
	}
	now, err := r.Groups(ctx)
	if err != nil {
		return meta{}, "", err
	}
	m := meta{Name: o.Name, Branch: branch, BaseCommit: base, MadeBranch: made, Port: freePorts(now), Created: time.Now().UTC().Truncate(time.Second), Joined: o.joined, Env: o.Env}
	return m, admin, writeRecord(admin, m)
}

// Each group has a block of PortBlock ports, from its Port on, that its terminals get as
// KRAD_ADE_PORT, so that the dev servers of parallel groups do not fight over one port. The
// blocks start at FirstPort; a new group takes the lowest block no group of its repository
// has.
const (
	FirstPort = 20000
	PortBlock = 10
	lastPort  = 60000 - PortBlock // below Linux's default ephemeral range
)

// freePorts is the first port of the lowest block that none of groups has.
func freePorts(groups []Group) int {
	used := map[int]bool{}
	for _, g := range groups {
		used[g.Port] = true
	}
	p := FirstPort
	for used[p] && p < lastPort {
		p += PortBlock
	}
	return p
}

func step(s string) {
	if createStep != nil {
		createStep(s)
	}
}

// rollback undoes what Create did, on a context of its own: ctx may be why it is undone.
func (c *creation) rollback(ctx context.Context) error {
	r, dir := c.r, c.dir
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []error
	if c.madeDir {
		// git worktree remove would refuse a half-made worktree; its two parts are ours (this
		// call made the folder), so remove them directly.
		admins, err := r.adminDirs()
		if err != nil {
			errs = append(errs, err)
		}
		if admin, ok := admins[dir]; ok {
			if err := os.RemoveAll(admin); err != nil {
				errs = append(errs, err)
			}
		}
		for _, admin := range r.halfMadeAdmins(dir) {
			if err := os.RemoveAll(admin); err != nil {
				errs = append(errs, err)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if c.madeBranch {
		// Only while it still points at base: then it holds nothing of anyone's.
		if _, err := r.resolve(ctx, "refs/heads/"+c.branch); err == nil {
			if _, err := git(ctx, gitRun{dir: r.Top, write: true}, "update-ref", "-d", "refs/heads/"+c.branch, c.base); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.madeRoot {
		os.Remove(filepath.Dir(dir)) // only if empty: another group may have been made there meanwhile
	}
	return errors.Join(errs...)
}

// resolve turns what names a commit into its hash; an error wrapping ErrNotFound when it names
// none (and git's error, when git said why).
//
// rev reaches git as data: after --end-of-options, so that no name is an option, and with
// ^{commit}, so that only a commit is an answer (not a tree, a blob, a tag of a tree). git answers
// "none" for most names that name nothing (exit 1), but for some it dies instead (exit 128): a
// reflog entry past the reflog's end (HEAD@{1} in a repository of one commit), an upstream or
// push branch a branch does not have (@{u}). Those are names of nothing too, when git works on
// the repository otherwise; a repository git cannot read is git's error, as it was.
func (r *Repo) resolve(ctx context.Context, rev string) (string, error) {
	out, err := git(ctx, gitRun{dir: r.Top}, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err == nil {
		return strings.TrimSpace(string(out)), nil
	}
	if ctx.Err() == nil {
		switch exitCode(err) {
		case 1:
			return "", fmt.Errorf("%s: %w", termsafe.QuoteMax(rev, 60), ErrNotFound)
		case 128:
			if _, gitErr := git(ctx, gitRun{dir: r.Top}, "rev-parse", "--git-dir"); gitErr == nil {
				return "", fmt.Errorf("%s: %w: %w", termsafe.QuoteMax(rev, 60), ErrNotFound, err)
			}
		}
	}
	return "", err
}

// noBase is the answer to a base that names no commit: not_found, with what git said of it
// when it said anything (an upstream that is not configured).
func noBase(base string, err error) error {
	why := ""
	var ge *GitError
	if errors.As(err, &ge) && ge.Stderr != "" {
		why = " (git: " + ge.Stderr + ")"
	}
	return api.Errorf(api.CodeNotFound, "base %s is no commit of the repository%s", termsafe.QuoteMax(base, 60), why).WithCause(ErrNotFound)
}

func conflict(format string, args ...any) error {
	return api.Errorf(api.CodeConflict, format, args...).WithCause(ErrConflict)
}

// diskFull says whether err is a write that failed for want of room: ErrDiskFull (noRoomFor's
// finding), the system's error (ENOSPC, or EDQUOT for a quota), or git's words for it, which it
// prints in place of the system's error in some places ("Out of diskspace"). git runs with
// LC_ALL=C, so its words are these.
func diskFull(err error) bool {
	if errors.Is(err, ErrDiskFull) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	msg := err.Error()
	for _, words := range []string{"No space left on device", "Out of diskspace", "Disk quota exceeded"} {
		if strings.Contains(msg, words) {
			return true
		}
	}
	return false
}

// realPath is p with the symlinks of its longest existing part resolved, as git resolves them.
func realPath(p string) string {
	rest := ""
	for q := p; ; {
		if real, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(q)
		if parent == q {
			return p
		}
		rest = filepath.Join(filepath.Base(q), rest)
		q = parent
	}
}

// lockReason is the reason a group's worktree is locked with.
func lockReason(name string) string { return "krad-ade group " + name }

// halfMadeAdmins are the admin folders that a `git worktree add` into dir, stopped before it
// finished writing their gitdir file, left: named like dir's last element, or that and digits
// (git's names for them), with a gitdir file that is missing or holds the start of dir's path,
// and either empty or with a lock file that holds our lock's reason or its start (git was stopped
// while writing it). A Create into dir cannot run at the same time (it would not have made the
// folder), so they are its own.
func (r *Repo) halfMadeAdmins(dir string) []string {
	name := filepath.Base(dir)
	base := filepath.Join(r.CommonDir, "worktrees")
	entries, _ := os.ReadDir(base)
	var found []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), name)
		if !ok || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		admin := filepath.Join(base, e.Name())
		gitdir, err := os.ReadFile(filepath.Join(admin, "gitdir"))
		if err == nil && !strings.HasPrefix(dir+"/.git\n", string(gitdir)) {
			continue // another worktree's
		}
		inside, _ := os.ReadDir(admin)
		locked, err := os.ReadFile(filepath.Join(admin, "locked"))
		if len(inside) == 0 || err == nil && strings.HasPrefix(lockReason(name)+"\n", string(locked)) {
			found = append(found, admin)
		}
	}
	return found
}

// restoreSnapshot puts back, in the new checkout at dir of branch (at tip), the uncommitted work a
// retired group of that branch left on refs/krad/snapshots/<old> for branch krad/<old>, as
// uncommitted changes (new files untracked), when that snapshot was made on top of tip. It
// returns the snapshot's commit, or "" when there is none to restore. The ref stays: a later
// snapshot of the name keeps it as a parent.
func (r *Repo) restoreSnapshot(ctx context.Context, dir, branch, tip string) (string, error) {
	old, ok := strings.CutPrefix(branch, BranchPrefix)
	if !ok || ValidName(old) != nil {
		return "", nil
	}
	snap, err := r.resolve(ctx, SnapshotPrefix+old)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	out, err := git(ctx, gitRun{dir: dir}, "rev-parse", "--verify", snap+"^1")
	if err != nil || strings.TrimSpace(string(out)) != tip {
		return "", nil // made on another commit: the branch moved on since
	}
	// Index and files to the snapshot, then the index back to HEAD: the work is uncommitted.
	// read-tree would replace an ignored file or remove a folder in its way (see overwrite.go),
	// but none can be here: Create made the folder, and it holds tip's files alone, as the
	// checkout just wrote them, which are what read-tree replaces.
	if _, err := git(ctx, gitRun{dir: dir, write: true}, "read-tree", "-m", "-u", tip, snap); err != nil {
		return "", fmt.Errorf("restore the snapshot %s: %w", snap, err)
	}
	if _, err := git(ctx, gitRun{dir: dir, write: true}, "reset", "-q", "--no-refresh"); err != nil {
		return "", fmt.Errorf("restore the snapshot %s: %w", snap, err)
	}
	return snap, nil
}
