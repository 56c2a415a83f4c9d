package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/worktree"
)

// Variants: one task run several ways at once, each worker in its own group of one variant set,
// all from one base commit, so that their patches compare; the lead then picks the best
// (design/groups.md, Variants). The set is git's data too: each group's record names its set and
// the lead that ran it, so a restart between run and pick loses nothing.

// runVariants answers RunVariants: every group of the set is made first, all or nothing, then
// the workers start. A client that leaves before they have all started leaves no half set: the
// workers started are closed, and the set's groups retire.
func (a *App) runVariants(ctx context.Context, from api.TerminalID, b *api.RunVariantsBody) (api.Variants, error) {
	e, err := a.env(ctx, from.Environment)
	if err != nil {
		return api.Variants{}, err
	}
	// Every worker's command first: an unknown agent is refused before anything is made.
	type job struct {
		argv  []string
		typed bool
		title string
	}
	var jobs []job
	for _, v := range b.Agents {
		argv, typed, err := a.spawnArgv(&api.SpawnBody{Agent: v.Agent, Command: v.Command, Prompt: b.Prompt})
		if err != nil {
			return api.Variants{}, err
		}
		who := v.Agent
		if who == "" {
			who = api.ProgramTitle(v.Command)
		}
		for range v.Count {
			jobs = append(jobs, job{argv: argv, typed: typed, title: who})
		}
	}
	a.mu.Lock()
	lead := a.terminalLocked(from.Environment, from.Terminal)
	if lead == nil {
		a.mu.Unlock()
		return api.Variants{}, api.NoTerminal(from.Environment, from.Terminal)
	}
	session := lead.session
	a.mu.Unlock()

	res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpCreateSet, Hint: b.Title,
		Set: &worktree.SetOptions{Count: len(jobs), Base: b.Base, Lead: from.String()}})
	if err != nil {
		return api.Variants{}, err
	}
	set := res.Set
	a.log.Info("variant set made", "environment", e.name, "set", set.Name, "variants", len(set.Groups), "by", from.String())
	for i := range set.Groups {
		if in := set.Groups[i].Included; in != nil && (in.Cut != "" || len(in.Skipped) > 0) {
			e.logCreated(&set.Groups[i], from.String())
		}
	}
	out := api.Variants{Set: set.Name, BaseCommit: set.BaseCommit}
	var opened []*terminal
	undo := func(cause error) (api.Variants, error) {
		// No half set: close what started; the groups retire with their last terminal, and
		// those that never had one retire here.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupDeadline)
		defer cancel()
		for _, t := range opened {
			_ = e.kill(cctx, t)
		}
		for _, g := range set.Groups {
			e.retiredBy(cctx, g.Name)
			a.mu.Lock()
			has := e.inGroupLocked(g.Name)
			a.mu.Unlock()
			if !has {
				_, _ = e.worktree(cctx, worktree.Op{Op: worktree.OpRetire, Group: g.Name})
			}
		}
		return api.Variants{}, cause
	}
	for i, g := range set.Groups {
		j := jobs[i]
		spec := windowSpec{
			title:   fmt.Sprintf("%s · %s", b.Title, j.title),
			role:    api.RoleWorker,
			session: session,
			group:   g.Name,
			lead:    from.Terminal,
			argv:    j.argv,
			prompt:  j.typed,
			dir:     g.Dir,
			port:    g.Port,
			setup:   g.Setup != nil && g.Setup.State != worktree.SetupDone,
		}
		if len(spec.title) > api.MaxTitle {
			spec.title = b.Title
		}
		opened1 := time.Now()
		t, err := e.open(ctx, spec)
		if err != nil {
			return undo(fmt.Errorf("start variant %s: %w", g.Name, err))
		}
		opened = append(opened, t)
		if spec.prompt {
			go func() {
				defer t.sendMu.Unlock()
				e.typePrompt(t, b.Prompt, opened1.Add(promptReady))
			}()
		}
		a.mu.Lock()
		out.Variants = append(out.Variants, api.Variant{Group: g.Name, Agent: t.agent()})
		a.mu.Unlock()
	}
	go a.tellSettled(e.name, set.Name, opened)
	return out, nil
}

// tellSettled tells subscribers, in an AppEvent (VariantsSettled), once every worker of variant
// set name has settled after its task, as a Wait on each would return; a worker closed meanwhile
// counts as settled. It gives up when the app stops.
func (a *App) tellSettled(env, name string, workers []*terminal) {
	a.mu.Lock()
	ctx := a.runCtx
	a.mu.Unlock()
	if ctx == nil {
		return
	}
	var states []string
	for _, t := range workers {
		for {
			ag, err := a.waitFor(ctx, env, t.number, api.MaxWait, func(t *terminal) bool { return t.settled(a.cfg.Reaction) }, true)
			if ctx.Err() != nil {
				return
			}
			if err != nil && !errors.Is(err, api.ErrTimedOut) {
				ag = api.Agent{Environment: env, Terminal: t.number, State: api.StateClosed} // gone before the wait
			}
			if !errors.Is(err, api.ErrTimedOut) {
				states = append(states, fmt.Sprintf("%s %s", ag.ID(), ag.State))
				break
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.envs[env] != nil {
		a.publishAppLocked(api.AppEvent{Kind: api.VariantsSettled, Environment: env,
			Message: fmt.Sprintf("set %s: its %d variants settled (%s)", name, len(workers), strings.Join(states, ", "))})
	}
}

// pickVariant answers PickVariant: the winner, which must be of one of the caller's sets and
// settled, is taken as asked; the other variants' terminals close, and their groups retire with
// their work kept.
func (a *App) pickVariant(ctx context.Context, from api.TerminalID, b *api.PickVariantBody) (api.Picked, error) {
	e, err := a.env(ctx, from.Environment)
	if err != nil {
		return api.Picked{}, err
	}
	winner, groups, err := e.variant(ctx, b.Group, from)
	if err != nil {
		return api.Picked{}, err
	}
	// One pick of a set at a time: the second finds the first's winner picked, or its own
	// variant retired.
	unlock, err := e.groupLocks.Acquire(ctx, "set/"+winner.Set) // a group's name holds no /
	if err != nil {
		return api.Picked{}, err
	}
	defer unlock()
	set := winner.Set
	if winner, groups, err = e.variant(ctx, b.Group, from); code(err) == api.CodeNotFound {
		return api.Picked{}, api.Errorf(api.CodeConflict, "another pick of set %s went first: variant %s was closed and retired, its work kept (krad groups lists it)", set, b.Group)
	} else if err != nil {
		return api.Picked{}, err
	}
	if winner.Picked != "" {
		return api.Picked{}, api.Errorf(api.CodeConflict, "variant %s was picked already (%s)", b.Group, winner.Picked)
	}
	unlockWinner, err := e.groupLocks.Acquire(ctx, b.Group) // it does not retire under the pick
	if err != nil {
		return api.Picked{}, err
	}
	defer unlockWinner()
	// Settled: every terminal of the winner has settled (a closed one has).
	a.mu.Lock()
	var losers []*terminal
	for _, t := range e.terminals {
		switch {
		case t.group == b.Group && !api.Settled(t.state):
			a.mu.Unlock()
			return api.Picked{}, api.Errorf(api.CodeConflict, "variant %s is still %s (%s): wait for it first (krad wait %d)", b.Group, t.state, t.id(), t.number)
		case t.group != b.Group && inSet(groups, t.group, winner.Set):
			losers = append(losers, t)
		}
	}
	a.mu.Unlock()

	how := b.How
	if how == "" {
		how = api.PickSquash
	}
	pres, err := e.worktree(ctx, worktree.Op{Op: worktree.OpPick, Pick: &worktree.PickOptions{Group: b.Group, How: how, Message: b.Message}})
	if err != nil {
		return api.Picked{}, err
	}
	p := pres.Picked
	out := api.Picked{Group: b.Group, How: how, Commit: p.Commit, Branch: p.Branch, Snapshot: p.Snapshot, Closed: []string{}}
	var errs []error
	for _, t := range losers {
		if err := e.kill(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", t.id(), err))
			continue
		}
		out.Closed = append(out.Closed, t.id().String())
	}
	var others []string
	for _, g := range groups {
		if g.Set != winner.Set || g.Name == b.Group {
			continue
		}
		others = append(others, g.Name)
		e.retiredBy(ctx, g.Name)
		a.mu.Lock()
		has := e.inGroupLocked(g.Name)
		a.mu.Unlock()
		if !has { // a variant with no terminal left (its worker failed to start, say)
			if _, err := e.worktree(ctx, worktree.Op{Op: worktree.OpRetire, Group: g.Name}); err != nil && code(err) != api.CodeNotFound {
				errs = append(errs, fmt.Errorf("retire %s: %w", g.Name, err))
			}
		}
	}
	msg := fmt.Sprintf("variant %s of set %s picked (%s", b.Group, winner.Set, how)
	if p.Commit != "" {
		msg += " → " + short(p.Commit) + " on " + p.Branch
	}
	closed := "no other terminal"
	if len(out.Closed) > 0 {
		closed = strings.Join(out.Closed, ", ")
	}
	msg += "); closed " + closed + "; " + e.keptOf(ctx, others)
	a.mu.Lock()
	a.publishAppLocked(api.AppEvent{Kind: api.VariantPicked, Environment: e.name, Message: msg})
	a.mu.Unlock()
	a.log.Info("variant picked", "environment", e.name, "group", b.Group, "set", winner.Set, "how", how, "commit", p.Commit)
	if len(errs) > 0 {
		return out, fmt.Errorf("the pick is done (%s), but: %w", strings.TrimPrefix(msg, "variant "), errors.Join(errs...))
	}
	return out, nil
}

// variant finds group, which must be a variant of one of from's sets, and the environment's
// groups.
func (e *environment) variant(ctx context.Context, group string, from api.TerminalID) (worktree.Group, []worktree.Group, error) {
	res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpGroups})
	if err != nil {
		return worktree.Group{}, nil, err
	}
	for _, g := range res.List.Groups {
		if g.Name != group {
			continue
		}
		if err := worktree.CheckVariant(g); err != nil {
			return g, nil, err
		}
		if g.Lead != from.String() {
			return g, nil, api.Errorf(api.CodeForbidden, "group %s is of the variant set %s, which %s ran, not this lead: a lead picks within its own sets", group, g.Set, g.Lead)
		}
		return g, res.List.Groups, nil
	}
	return worktree.Group{}, nil, api.Errorf(api.CodeNotFound, "no group %s: krad groups lists them", group)
}

// keptOf says what the retiring of the variants others kept, as Groups lists it once they
// retired: "kept retry-2 on krad/retry-2 and refs/krad/snapshots/retry-2, …"; a variant that
// kept nothing, or did not retire, is said so too. Names and refs only.
func (e *environment) keptOf(ctx context.Context, others []string) string {
	if len(others) == 0 {
		return "no other variant"
	}
	res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpGroups})
	if err != nil {
		e.warn("could not list what the variants that were not picked kept", "err", err)
		return "krad groups lists what the others kept"
	}
	var kept, nothing, stayed []string
	for _, name := range others {
		switch k, g := keptFor(res.List, name); {
		case g:
			stayed = append(stayed, name)
		case k.Branch != "" && k.Snapshot != "":
			kept = append(kept, name+" on "+k.Branch+" and "+k.Snapshot)
		case k.Branch != "" || k.Snapshot != "":
			kept = append(kept, name+" on "+k.Branch+k.Snapshot)
		default:
			nothing = append(nothing, name)
		}
	}
	var parts []string
	if len(kept) > 0 {
		parts = append(parts, "kept "+strings.Join(kept, ", "))
	}
	if len(nothing) > 0 {
		parts = append(parts, strings.Join(nothing, ", ")+" held no work to keep")
	}
	if len(stayed) > 0 {
		parts = append(parts, strings.Join(stayed, ", ")+" did not retire (krad groups lists them)")
	}
	return strings.Join(parts, "; ")
}

// keptFor is what l keeps of the group name, and whether it is still a group.
func keptFor(l *worktree.List, name string) (worktree.Kept, bool) {
	for _, g := range l.Groups {
		if g.Name == name {
			return worktree.Kept{}, true
		}
	}
	for _, k := range l.Kept {
		if k.Name == name {
			return k, false
		}
	}
	return worktree.Kept{}, false
}

// inSet says whether group is one of set's, by the groups' records.
func inSet(groups []worktree.Group, group, set string) bool {
	for _, g := range groups {
		if g.Name == group {
			return g.Set == set
		}
	}
	return false
}

// code is an error's answer code, "" for an error that is none.
func code(err error) api.ErrorCode {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
