package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/worktree"
)

// Groups are git worktrees of the repository that holds an environment's folder (package
// worktree does every git operation; the environment's Host runs them where the repository is).
// The app remembers no group of its own: git's admin data holds them, so a restart finds them
// again, and a terminal's group is in its window's options (windowMeta). What the app adds is
// when a group retires: once its last terminal closes (Close, CloseSession, a window closed by
// hand, its process exiting with the window), its uncommitted work is kept and its checkout
// removed, and an AppEvent says what was removed and what was kept. A group whose last terminal
// closed while the app was away retires when the app attaches to the environment again
// (retireOrphans): the group's record says whether a terminal ever joined it, so that a group made
// by CreateWorktree, waiting for its first worker, is not taken for one.
//
// A group's operations on one environment are serialised by name (environment.groupLocks), so
// that a Spawn that joins a group and the retire of that group's last terminal cannot cross: the
// retire looks again, under the lock, for a terminal of the group, and leaves the group to the
// new one.

// groupDeadline bounds a retire the app starts by itself: the deadline of the requests that
// retire a group (Close).
const groupDeadline = time.Minute

// worktree runs op on the environment's host; the answer's error is the operation's, or the
// way to the host failing.
func (e *environment) worktree(ctx context.Context, op worktree.Op) (worktree.Result, error) {
	op.Env = e.name
	if op.Op == worktree.OpCreate || op.Op == worktree.OpCreateSet {
		for _, s := range e.app.cfg.Setups {
			if s.Environment == "" || s.Environment == e.name {
				op.Setups = append(op.Setups, s.Rule)
			}
		}
	}
	key, err := e.app.prompts.ownKey(e.name)
	if err != nil {
		return worktree.Result{}, err
	}
	op.AskpassKey = key.Reveal()
	res, err := e.host.Worktree(ctx, op)
	if err != nil {
		return worktree.Result{}, err
	}
	if res.Error != nil {
		return res, res.Error
	}
	return res, nil
}

// createWorktree answers CreateWorktree: a new group, never one that exists.
func (a *App) createWorktree(ctx context.Context, from api.TerminalID, b *api.CreateWorktreeBody) (worktree.Group, error) {
	e, err := a.env(ctx, from.Environment)
	if err != nil {
		return worktree.Group{}, err
	}
	op := worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: b.Name, Base: b.Base, Branch: b.Branch},
		Hint: strings.TrimPrefix(b.Branch, worktree.BranchPrefix)}
	if b.Name != "" {
		unlock, err := e.groupLocks.Acquire(ctx, b.Name)
		if err != nil {
			return worktree.Group{}, err
		}
		defer unlock()
	}
	res, err := e.worktree(ctx, op)
	if err != nil {
		return worktree.Group{}, err
	}
	e.logCreated(res.Group, from.String())
	return *res.Group, nil
}

// logCreated says in the log that group g was made, by whom ("" the app), and what was copied
// into its checkout of the ignored files .worktreeinclude and the config name: a cut, or a file
// skipped (a symlink), as a warning.
func (e *environment) logCreated(g *worktree.Group, by string) {
	args := []any{"environment", e.name, "group", g.Name, "branch", g.Branch}
	if by != "" {
		args = append(args, "by", by)
	}
	in := g.Included
	if in == nil {
		e.app.log.Info("group created", args...)
		return
	}
	args = append(args, "included_files", in.Files, "included_bytes", in.Bytes)
	if in.Cut == "" && len(in.Skipped) == 0 {
		e.app.log.Info("group created", args...)
		return
	}
	if in.Cut != "" {
		args = append(args, "cut", in.Cut)
	}
	if len(in.Skipped) > 0 {
		args = append(args, "skipped", strings.Join(in.Skipped, ", "), "skipped_more", in.SkippedMore)
	}
	e.app.log.Warn("group created, not every included file copied", args...)
}

// joinGroup finds group name, or makes it, for a terminal about to open in it; the func unlocks
// the group once the terminal is open (or failed to).
func (e *environment) joinGroup(ctx context.Context, name string) (worktree.Group, func(), error) {
	unlock, err := e.groupLocks.Acquire(ctx, name)
	if err != nil {
		return worktree.Group{}, nil, err
	}
	res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: name}, Join: true})
	if err != nil {
		unlock()
		return worktree.Group{}, nil, err
	}
	if !res.Joined {
		e.logCreated(res.Group, "")
	}
	if res.Group.Missing {
		unlock()
		return worktree.Group{}, nil, api.Errorf(api.CodeConflict, "group %s has no checkout any more (its folder was deleted); its branch %s is kept: retire it with krad close on its terminals, or create a new group from the branch",
			name, res.Group.Branch)
	}
	return *res.Group, unlock, nil
}

// changes answers Changes: the group of the target, or the one named, or the caller's own.
func (a *App) changes(ctx context.Context, from api.TerminalID, b *api.ChangesBody) (worktree.Changes, error) {
	e, err := a.env(ctx, from.Environment)
	if err != nil {
		return worktree.Changes{}, err
	}
	a.mu.Lock()
	n := from.Terminal
	if b.Target != nil {
		n = int(*b.Target)
	}
	t := a.terminalLocked(from.Environment, n)
	a.mu.Unlock()
	if t == nil {
		return worktree.Changes{}, api.NoTerminal(from.Environment, n)
	}
	group := t.group
	if b.Group != nil {
		group = *b.Group
	}
	res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpChanges, Group: group, Changes: &worktree.ChangesOptions{
		Stat: b.Stat, Paths: b.Paths, Binary: b.Binary, MaxPatch: b.MaxPatch, MaxFilePatch: b.MaxFilePatch}})
	if err != nil {
		return worktree.Changes{}, err
	}
	return *res.Changes, nil
}

// groups answers Groups: the groups of the caller's environment, and what retired ones kept.
func (a *App) groups(ctx context.Context, from api.TerminalID) (worktree.List, error) {
	e, err := a.env(ctx, from.Environment)
	if err != nil {
		return worktree.List{}, err
	}
	res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpGroups})
	if err != nil {
		return worktree.List{}, err
	}
	return *res.List, nil
}

// inGroupLocked says whether a terminal of the environment works in group. app.mu must be held.
func (e *environment) inGroupLocked(group string) bool {
	for _, t := range e.terminals {
		if t.group == group {
			return true
		}
	}
	return false
}

// leftGroupLocked is called when a terminal of group closed: when it was the group's last, the
// group retires, in the background. app.mu must be held.
func (e *environment) leftGroupLocked(group string) {
	if group == "" || e.inGroupLocked(group) {
		return
	}
	e.retireLocked(group)
}

// retireOrphans retires, after an attach, the groups whose last terminal closed while the app
// was not there to see it (stopped, or its way to the host broken): those that a terminal joined
// (Group.Joined) and that no terminal is in now, nor any window of the session (held: the groups
// of every window adopt read, the windows it left out for want of room included). A group no
// terminal ever joined (made by CreateWorktree, waiting for its first worker) stays, and so does
// a damaged one. Each retires as when its last terminal closes (retire looks again, under the
// group's lock, and tells subscribers). A host whose worktrees root was empty at its connect
// (Host.MayHaveGroups) has no groups, and is not asked.
func (e *environment) retireOrphans(ctx context.Context, held map[string]bool) {
	if !e.host.MayHaveGroups() {
		return
	}
	// The Groups request's deadline: this is that request, made by the app.
	octx, cancel := context.WithTimeout(ctx, api.NewRequest(api.Groups, nil).Deadline())
	res, err := e.worktree(octx, worktree.Op{Op: worktree.OpGroups})
	cancel()
	if err != nil {
		// Most environments' folders are in no repository, or on a host without git: they have
		// no groups to retire.
		var ae *api.Error
		if !(errors.As(err, &ae) && ae.Code == api.CodeUnavailable) && ctx.Err() == nil {
			e.app.log.Warn("could not look for groups whose last terminal closed while the app was away", "environment", e.name, "err", err)
		}
		return
	}
	a := e.app
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, g := range res.List.Groups {
		// Another environment's groups are its own to retire (two environments may work in one
		// repository: two Host aliases of one host, say); a group made before groups recorded
		// their environment is taken for this one's, as it was then.
		mine := g.Env == "" || g.Env == e.name
		failed := g.Setup != nil && g.Setup.State == worktree.SetupFailed // kept for the person
		if mine && g.Joined && g.Damaged == "" && !failed && !held[g.Name] && !e.inGroupLocked(g.Name) {
			a.log.Info("group left without terminals while the app was away: it retires", "environment", e.name, "group", g.Name)
			e.retireLocked(g.Name)
		}
	}
}

// retireLocked starts the retire of group, in the background, unless one runs. app.mu must be
// held.
func (e *environment) retireLocked(group string) {
	if e.retiring == nil {
		e.retiring = map[string]chan struct{}{}
	}
	if _, ok := e.retiring[group]; ok {
		return
	}
	done := make(chan struct{})
	e.retiring[group] = done
	go e.retire(group, done)
}

// retiredBy waits until the retire of group, if one runs, has ended, or ctx is done.
func (e *environment) retiredBy(ctx context.Context, group string) {
	e.app.mu.Lock()
	done := e.retiring[group]
	e.app.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// retire retires group, unless a terminal joined it meanwhile, and tells subscribers what it
// removed and kept, or why it could not.
func (e *environment) retire(group string, done chan struct{}) {
	a := e.app
	defer func() {
		a.mu.Lock()
		delete(e.retiring, group)
		a.mu.Unlock()
		close(done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), groupDeadline)
	defer cancel()
	unlock, err := e.groupLocks.Acquire(ctx, group)
	if err != nil {
		return
	}
	defer unlock()
	a.mu.Lock()
	joined := e.inGroupLocked(group)
	a.mu.Unlock()
	if joined {
		return
	}
	// Auto: a group whose setup failed is kept for the person to look at.
	res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpRetire, Group: group, Auto: true})
	ev := api.AppEvent{Kind: api.GroupRetired, Environment: e.name}
	if err != nil {
		ev.Kind = api.GroupNotRetired
		ev.Message = fmt.Sprintf("group %s: its last terminal closed, and it could not retire: %v", group, err)
		a.log.Warn("a group whose last terminal closed could not retire", "environment", e.name, "group", group, "err", err)
		a.mu.Lock()
		a.publishAppLocked(ev)
		a.mu.Unlock()
		return
	}
	e.tellRetired(res.Retired, "its last terminal closed")
}

// tellRetired logs what a retire did (removed the checkout, or held it) and tells subscribers,
// with a group_retired or group_not_retired event. by says who asked.
func (e *environment) tellRetired(r *worktree.Retired, by string) {
	a := e.app
	ev := api.AppEvent{Kind: api.GroupRetired, Environment: e.name}
	if len(r.Held) > 0 {
		ev.Kind, ev.Message = api.GroupNotRetired, heldMessage(r)
		a.log.Warn("group held: its checkout keeps nested repositories a snapshot cannot hold; it stays until the person retires it with force",
			"environment", e.name, "group", r.Group, "dir", r.Dir, "held", strings.Join(r.Held, ", "), "by", by)
	} else {
		ev.Message = retiredMessage(r)
		a.log.Info("group retired", "environment", e.name, "group", r.Group, "removed", r.Removed,
			"snapshot", r.SnapshotCommit, "branch_deleted", r.BranchDeleted, "by", by)
	}
	a.mu.Lock()
	a.publishAppLocked(ev)
	a.mu.Unlock()
}

// retireGroup answers RetireGroup: the person retires a group that no terminal is in, as its last
// terminal closing would; with Force a held one too, its nested repositories with it. Subscribers
// hear it as they hear a retire of the app's own.
func (a *App) retireGroup(ctx context.Context, from api.TerminalID, b *api.RetireGroupBody) (worktree.Retired, error) {
	e, err := a.env(ctx, from.Environment)
	if err != nil {
		return worktree.Retired{}, err
	}
	e.retiredBy(ctx, b.Group) // one the app started goes first
	unlock, err := e.groupLocks.Acquire(ctx, b.Group)
	if err != nil {
		return worktree.Retired{}, err
	}
	defer unlock()
	a.mu.Lock()
	var in []string
	for _, t := range e.terminals {
		if t.group == b.Group {
			in = append(in, strconv.Itoa(t.number))
		}
	}
	a.mu.Unlock()
	if len(in) > 0 {
		return worktree.Retired{}, api.Errorf(api.CodeConflict, "group %s has terminals in it (%s): close them (krad close), and it retires by itself", b.Group, strings.Join(in, ", "))
	}
	res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpRetire, Group: b.Group, Force: b.Force})
	if err != nil {
		return worktree.Retired{}, err
	}
	by := from.String()
	if b.Force {
		by += ", with force"
	}
	e.tellRetired(res.Retired, by)
	return *res.Retired, nil
}

// heldMessage says that a retire kept the checkout, for what folders, and what the person can do.
func heldMessage(r *worktree.Retired) string {
	return fmt.Sprintf("group %s is held: its checkout %s keeps git data a snapshot cannot hold, in %s (a nested repository, or a submodule with unpushed work); it stays, nothing removed: push or move that work, or retire the group with force (krad retire --force %s)",
		r.Group, r.Dir, strings.Join(r.Held, ", "), r.Group)
}

// retiredMessage says what a retire removed and kept, in names and ids only.
func retiredMessage(r *worktree.Retired) string {
	var b strings.Builder
	fmt.Fprintf(&b, "group %s retired: ", r.Group)
	if r.Removed {
		b.WriteString("its checkout was removed")
	} else {
		b.WriteString("its checkout was already gone")
	}
	if r.Snapshot != "" {
		fmt.Fprintf(&b, "; its uncommitted work is kept on %s (%s)", r.Snapshot, short(r.SnapshotCommit))
	}
	switch {
	case r.BranchDeleted:
		fmt.Fprintf(&b, "; branch %s, which held nothing, was deleted", r.Branch)
	default:
		fmt.Fprintf(&b, "; branch %s is kept (%s)", r.Branch, cmp.Or(r.BranchKept, "it holds work"))
	}
	return b.String()
}

func short(hash string) string { return hash[:min(len(hash), 12)] }

// setupReportedLocked tells the log and subscribers how terminal t's group's setup goes, as t
// reported it (b.Setup): t runs it, or waits for another terminal's run (b.Message says which),
// or it is done, or it failed (b.Message: how, and the end of its output, which goes to the
// app's own face only). a.mu must be held.
func (a *App) setupReportedLocked(t *terminal, b *api.ReportBody) {
	id := t.id()
	ev := api.AppEvent{Kind: api.GroupSetup, Environment: t.env}
	st := &SetupStatus{Terminal: id, Group: t.group, State: b.Setup}
	switch b.Setup {
	case api.SetupRunning:
		if b.Message != "" {
			ev.Message = fmt.Sprintf("%s waits for group %s's setup (%s)", id, t.group, termsafe.Shorten(b.Message, 200))
		} else {
			ev.Message = fmt.Sprintf("group %s is setting up in %s", t.group, id)
		}
		a.log.Info("group setting up", "environment", t.env, "group", t.group, "terminal", t.number, "waits", b.Message != "")
	case api.SetupDone:
		ev.Message = fmt.Sprintf("group %s is set up; %s starts its command", t.group, id)
		a.log.Info("group set up", "environment", t.env, "group", t.group, "terminal", t.number)
	default:
		why, _, _ := strings.Cut(b.Message, "\n")
		ev.Message = fmt.Sprintf("group %s's setup failed in %s (%s): its command does not run, and the group is kept for you to look at; krad groups shows the end of its output; krad retire %s when done",
			t.group, id, termsafe.Shorten(why, 200), t.group)
		st.Output = b.Message
		a.log.Warn("group setup failed: the group is kept for the person to look at", "environment", t.env, "group", t.group, "terminal", t.number, "why", termsafe.Shorten(why, 200))
	}
	a.hub.publish(Event{App: &ev, Setup: st})
	a.notifyLocked()
}
