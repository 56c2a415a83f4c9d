package app

import (
	"context"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/worktree"
)

// A group's work leaves it: a sync brings its branch up to the main checkout's HEAD; a push sends
// it to the repository's remote, and may open a pull request. Both run where the repository is
// (package worktree, through the environment's Host), under the group's lock, so that they do not
// cross a Spawn that joins the group or its retire.

// lockGroup is the environment env of a request about one group, with that group's lock taken:
// the func unlocks it.
func (a *App) lockGroup(ctx context.Context, env, group string) (*environment, func(), error) {
	e, err := a.env(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	unlock, err := e.groupLocks.Acquire(ctx, group)
	if err != nil {
		return nil, nil, err
	}
	return e, unlock, nil
}

// syncGroup answers SyncGroup.
func (a *App) syncGroup(ctx context.Context, from api.TerminalID, b *api.SyncGroupBody) (worktree.Synced, error) {
	e, unlock, err := a.lockGroup(ctx, from.Environment, b.Group)
	if err != nil {
		return worktree.Synced{}, err
	}
	defer unlock()
	res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpSync, Sync: &worktree.SyncOptions{Group: b.Group, How: b.How}})
	if err != nil {
		return worktree.Synced{}, err
	}
	s := res.Synced
	a.log.Info("group synced", "environment", e.name, "group", s.Group, "how", s.How, "onto", short(s.Onto), "old", short(s.Old), "new", short(s.New),
		"up_to_date", s.UpToDate, "by", from.String())
	return *s, nil
}

// pushGroup answers PushGroup: a lead's (the access table says so), for a group of its
// environment. git's prompts (a password) go to the person as the app's own gits' (terminal 0).
func (a *App) pushGroup(ctx context.Context, from api.TerminalID, b *api.PushGroupBody) (worktree.Pushed, error) {
	return a.push(ctx, from.Environment, from.String(), b)
}

// PushGroup is the person's push of terminal id's group, from the app's UI, and with pr a pull
// request for it: what a lead's PushGroup does, which the person may always make.
func (a *App) PushGroup(ctx context.Context, id api.TerminalID, pr bool) (worktree.Pushed, error) {
	group, ok := a.groupOf(id.Environment, id.Terminal)
	switch {
	case !ok:
		return worktree.Pushed{}, api.NoTerminal(id.Environment, id.Terminal)
	case group == "":
		return worktree.Pushed{}, api.Errorf(api.CodeBadRequest, "%s works in no group: a push sends a group's branch", id)
	}
	return a.push(ctx, id.Environment, "the person", &api.PushGroupBody{Group: group, PR: pr})
}

// push pushes group b.Group of environment env, for by.
func (a *App) push(ctx context.Context, env, by string, b *api.PushGroupBody) (worktree.Pushed, error) {
	e, unlock, err := a.lockGroup(ctx, env, b.Group)
	if err != nil {
		return worktree.Pushed{}, err
	}
	defer unlock()
	o := &worktree.PushOptions{Group: b.Group, Remote: b.Remote}
	if b.PR {
		o.PR = &worktree.PROptions{Title: b.Title, Draft: b.Draft}
	}
	res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpPush, Push: o})
	if err != nil {
		a.log.Warn("group not pushed", "environment", e.name, "group", b.Group, "pr", b.PR, "by", by, "err", err)
		return worktree.Pushed{}, err
	}
	p := res.Pushed
	a.log.Info("group pushed", "environment", e.name, "group", p.Group, "branch", p.Branch, "remote", p.Remote, "commit", short(p.Commit),
		"up_to_date", p.UpToDate, "pr", p.PR, "by", by)
	return *p, nil
}
