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
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// Group is a group: a worktree of the repository that the app made, found from git's own list of
// worktrees and what the app stored in the worktree's git admin folder.
type Group struct {
	Name string `json:"name"`
	// Dir is the group's checkout: Root/<repo-key>/<name>.
	Dir string `json:"dir"`
	// Branch is the group's branch, short (krad/fix-retry): the one it was made with, even if
	// its worker has since checked out another or detached its HEAD (see Head).
	Branch string `json:"branch"`
	// BaseCommit is the commit the group started from, resolved once when it was made: every
	// Changes compares against it.
	BaseCommit string `json:"base_commit"`
	// MadeBranch says whether the app made the branch (else it continues a branch that
	// existed): only a branch the app made may be deleted when the group retires.
	MadeBranch bool `json:"made_branch"`
	// Head is the commit checked out now.
	Head string `json:"head,omitempty"`
	// Locked: git's lock is on, so that `git worktree remove` refuses it.
	Locked bool `json:"locked"`
	// Missing: the folder is gone (deleted from under git); the branch and its commits are not.
	Missing bool `json:"missing,omitempty"`
	// Port is the first of the group's PortBlock ports (KRAD_ADE_PORT in its terminals); 0 for
	// a damaged record.
	Port int `json:"port,omitempty"`
	// Created is when the group was made.
	Created time.Time `json:"created"`
	// Set is the variant set the group is a variant of, and Lead the lead that ran the set
	// ("main:1"); both "" for a group of its own.
	Set  string `json:"set,omitempty"`
	Lead string `json:"lead,omitempty"`
	// Picked says that a lead picked the group's work, and how: "squash 9c01d2e…", "apply", ….
	Picked string `json:"picked,omitempty"`
	// Joined says that a terminal joined the group: written when a Spawn joins or makes it, and
	// by CreateSet, whose workers start at once. A group that no terminal is in retires only
	// once one was (a group made by CreateWorktree waits for its first worker), so that an app
	// started after the last terminal of a group closed can tell it from one still waiting.
	Joined bool `json:"joined,omitempty"`
	// Env is the environment that made the group (an Op's Env), whose terminals it is for; ""
	// for a group made before groups recorded it, or without an environment named.
	Env string `json:"env,omitempty"`
	// Held lists the folders of the checkout (relative, slash-separated) whose git data a
	// snapshot cannot hold: a nested repository, a submodule with work of its own. A retire
	// found them and kept the checkout in place; only a forced retire (the person asking)
	// removes it. Empty for a group not held.
	Held []string `json:"held,omitempty"`
	// Restored, in what Create returns, is the snapshot commit whose work it put back in the
	// continued branch's checkout as uncommitted changes.
	Restored string `json:"restored,omitempty"`
	// Setup is the group's setup command, from the person's config, and how it went: nil for
	// a group made without one.
	Setup *Setup `json:"setup,omitempty"`
	// Included, in what Create returns, is what it copied of the ignored files the repository's
	// IncludeFile and the config name (nil when they name none).
	Included *Included `json:"included,omitempty"`
	// Damaged says why the app's record of the group (metaFile) cannot be read, and what to do;
	// such a group is listed with what git knows of it (its name is its folder's), and nothing
	// but listing it and refusing its name is done with it.
	Damaged string `json:"damaged,omitempty"`

	admin string // the worktree's git admin folder, where metaFile is
}

// metaFile is the file, in a worktree's own git admin folder ($GIT_COMMON_DIR/worktrees/<id>),
// that holds what the app remembers of a group. Git removes the folder with the worktree, so
// the file cannot outlive its group; its presence is what makes a worktree a group.
const metaFile = "krad-group.json"

// meta is metaFile's content.
type meta struct {
	Name       string    `json:"name"`
	Branch     string    `json:"branch"`
	BaseCommit string    `json:"base_commit"`
	MadeBranch bool      `json:"made_branch"`
	Port       int       `json:"port,omitempty"`
	Created    time.Time `json:"created"`
	Set        string    `json:"set,omitempty"`
	Lead       string    `json:"lead,omitempty"`
	Picked     string    `json:"picked,omitempty"`
	Joined     bool      `json:"joined,omitempty"`
	Env        string    `json:"env,omitempty"`
	Held       []string  `json:"held,omitempty"`
}

// Groups lists the repository's groups, in the order git lists its worktrees. A worktree that
// the app did not make is not a group and is left out; one whose record is damaged is listed,
// with Damaged saying so, and fails nothing else.
func (r *Repo) Groups(ctx context.Context) ([]Group, error) {
	wts, err := r.worktrees(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return r.groupsOf(wts)
}

// groupsOf is Groups of the worktree list wts.
func (r *Repo) groupsOf(wts []worktree) ([]Group, error) {
	admins, err := r.adminDirs()
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	var groups []Group
	for i, wt := range wts {
		if i == 0 {
			continue // the main checkout
		}
		admin, ok := admins[wt.path]
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(admin, metaFile))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var m meta
		if err == nil {
			err = json.Unmarshal(data, &m)
		}
		if err == nil && ValidName(m.Name) != nil {
			err = errors.New("it names no valid group")
		}
		if err != nil {
			// One damaged record spoils its own group only: the others are listed, and served.
			d := Group{Dir: wt.path, Head: wt.head, Locked: wt.locked, admin: admin,
				Damaged: fmt.Sprintf("the record %s cannot be read (%s): remove the worktree %s by hand (git worktree unlock, then git worktree remove)",
					termsafe.Quote(filepath.Join(admin, metaFile)), termsafe.Shorten(err.Error(), 200), termsafe.Quote(wt.path))}
			if name := filepath.Base(wt.path); ValidName(name) == nil {
				d.Name = name
			}
			groups = append(groups, d)
			continue
		}
		g := Group{
			Name: m.Name, Dir: wt.path, BaseCommit: m.BaseCommit, MadeBranch: m.MadeBranch,
			Head: wt.head, Locked: wt.locked, Port: m.Port, Created: m.Created, admin: admin,
			Set: m.Set, Lead: m.Lead, Picked: m.Picked, Joined: m.Joined, Env: m.Env, Held: m.Held,
			Branch: m.Branch,
		}
		if _, err := os.Lstat(wt.path); wt.prunable || errors.Is(err, fs.ErrNotExist) {
			g.Missing = true
		}
		if g.Setup, err = readSetup(admin); err != nil {
			g.Setup = &Setup{State: SetupFailed, Why: termsafe.Shorten(err.Error(), 300)}
		} else if g.Setup != nil && g.Setup.State == SetupRunning && !setupHeld(admin) {
			// Its runner is gone (its terminal closed, killed): the next terminal runs it again.
			g.Setup.State, g.Setup.Why = SetupPending, "its terminal closed before it ended, so the group's next terminal runs it again"
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// group finds the group named name: not_found when there is none.
func (r *Repo) group(ctx context.Context, name string) (Group, error) {
	if err := ValidName(name); err != nil {
		return Group{}, err
	}
	groups, err := r.Groups(ctx)
	if err != nil {
		return Group{}, err
	}
	for _, g := range groups {
		switch {
		case g.Name != name:
		case g.Damaged != "":
			return Group{}, conflict("group %s: %s", name, g.Damaged)
		default:
			return g, nil
		}
	}
	return Group{}, api.Errorf(api.CodeNotFound, "no group %s in %s: see krad groups", name, termsafe.Quote(r.Top)).WithCause(ErrNotFound)
}

// adminDirs maps each linked worktree's folder to its git admin folder, read from the gitdir
// files git keeps there (the same files `git worktree list` reads).
func (r *Repo) adminDirs() (map[string]string, error) {
	base := filepath.Join(r.CommonDir, "worktrees")
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		admin := filepath.Join(base, e.Name())
		data, err := os.ReadFile(filepath.Join(admin, "gitdir"))
		if err != nil {
			continue // a half-made or broken entry: git lists it as prunable, if at all
		}
		gitfile := strings.TrimSuffix(string(data), "\n")
		m[strings.TrimSuffix(gitfile, "/.git")] = admin
	}
	return m, nil
}

// Kept is what a retired group left: its branch (krad/<name>) and the snapshot of its
// uncommitted work, either or both. Create with Branch continues it.
type Kept struct {
	Name string `json:"name"`
	// Branch is "" when only a snapshot is left (someone deleted the branch).
	Branch       string `json:"branch,omitempty"`
	BranchCommit string `json:"branch_commit,omitempty"`
	// Snapshot is the ref of the snapshot, refs/krad/snapshots/<name>; "" when there is none.
	Snapshot       string `json:"snapshot,omitempty"`
	SnapshotCommit string `json:"snapshot_commit,omitempty"`
}

// Kept lists what retired groups left, by name: the branches krad/<name> and the snapshot refs
// that no group has now. Branches of another prefix, which the app did not make, are not listed.
func (r *Repo) Kept(ctx context.Context) ([]Kept, error) {
	groups, err := r.Groups(ctx)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, g := range groups {
		live[g.Branch] = true
		live[g.Name] = true
	}
	out, err := git(ctx, gitRun{dir: r.Top}, "for-each-ref", "--format=%(objectname) %(refname)",
		"refs/heads/"+BranchPrefix, SnapshotPrefix)
	if err != nil {
		return nil, fmt.Errorf("list kept branches: %w", err)
	}
	var kept []Kept
	index := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		commit, ref, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		name, isBranch := strings.CutPrefix(ref, "refs/heads/"+BranchPrefix)
		if !isBranch {
			name = strings.TrimPrefix(ref, SnapshotPrefix)
		}
		if ValidName(name) != nil || live[name] || isBranch && live[BranchPrefix+name] {
			continue
		}
		i, seen := index[name]
		if !seen {
			i = len(kept)
			index[name] = i
			kept = append(kept, Kept{Name: name})
		}
		if isBranch {
			kept[i].Branch, kept[i].BranchCommit = BranchPrefix+name, commit
		} else {
			kept[i].Snapshot, kept[i].SnapshotCommit = ref, commit
		}
	}
	return kept, nil
}
