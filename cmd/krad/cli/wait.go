package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/krad-ade/krad/api"
	"github.com/spf13/pflag"
)

// waitCommand is `krad wait T…`: Wait, on one target or several at once, and an exit code that
// says how they settled.
func waitCommand() *command {
	var anyOne, all bool
	var timeout *uint32
	return &command{
		name:    "wait",
		args:    "T… [--any | --all] [--timeout D] [--json]",
		summary: "wait until agents settle: idle, needs input, done, failed or closed",
		json:    `print each agent as one JSON object, one line each`,
		help: `
Waits until the agent of terminal T settles after this request: idle, needs_input, done,
failed or closed. Then it prints the agent as krad check does.

After krad send, it waits for the agent's reaction first: anything on its screen but the echo
of the text sent, or a report of its own. A command the text started in the foreground (typed
into a shell) is the agent at work until it shows something or ends, however long that takes.
Only an agent that shows nothing, reports nothing and starts no command for 10 s is taken as it
is. An agent whose environment is down is unreachable, which is not settled: krad wait goes on
waiting for its environment to come back.

With several targets (comparing variants, say), krad waits for all of them (--all, the default)
and prints each as it settles; with --any, for the first that settles, and prints it.

T is a terminal of this terminal's own environment: its number, like 2, or main:2.

Exit codes: 0 every agent waited for is idle, needs input or done · 1 one failed or was closed
(krad says so on stderr, with its exit code) · 4 one did not settle within the timeout · and the
codes every krad command has.`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&anyOne, "any", false, "with several targets, return once the first settles")
			fs.BoolVar(&all, "all", false, "with several targets, wait for every one (the default)")
			fs.Var(secondsValue{&timeout}, "timeout", "give up after `D` (like 30s or 5m; at most and by default 30m)")
		},
		run: func(x *invocation, args []string) error {
			if anyOne && all {
				return x.usageError("give --any or --all, not both")
			}
			if len(args) == 0 {
				return x.usageError("%s needs a target: %s", x.path, targetForms)
			}
			targets := make([]api.Target, 0, len(args))
			seen := map[api.Target]bool{}
			for _, s := range args {
				t, err := x.target(s)
				if err != nil {
					return err
				}
				if !seen[t] {
					seen[t] = true
					targets = append(targets, t)
				}
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			secs := timeout
			if secs == nil {
				max := uint32(api.MaxWait.Seconds())
				secs = &max
			}
			return x.waitAll(b, targets, secs, anyOne)
		},
	}
}

// waited is one target's Wait: its agent and answer, or the error.
type waited struct {
	t   api.Target
	a   api.Agent
	raw json.RawMessage
	err error
}

// waitAll waits on every target at once, one connection each, printing each agent as it
// settles; with anyOne, it stops at the first (leaving cancels the other Waits in the app). The
// error says the worst of what happened: an error first, then a timeout, then an agent that
// failed or closed.
func (x *invocation) waitAll(b *bus, targets []api.Target, secs *uint32, anyOne bool) error {
	ctx, cancel := context.WithCancel(x.ctx)
	defer cancel()
	results := make(chan waited, len(targets))
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() {
			var a api.Agent
			// b.answer waits for the app's deadline, the timeout plus a second, and a little
			// more: the app answers TimedOut itself, and leaving early would cancel the Wait.
			raw, err := b.answer(ctx, api.NewRequest(api.Wait, &api.WaitBody{Target: t, TimeoutSecs: secs}), &a)
			results <- waited{t: t, a: a, raw: raw, err: err}
		})
	}
	go func() { wg.Wait(); close(results) }()

	var errs, timedOut, ended []error
	for r := range results {
		switch {
		case errors.Is(r.err, api.ErrTimedOut):
			timedOut = append(timedOut, &problem{
				err:  fmt.Errorf("terminal %d did not settle within %s: the app answered TimedOut", r.t, secondsValue{&secs}),
				kind: api.ErrTimedOut,
				hint: fmt.Sprintf("wait longer with --timeout, or see what it is doing with 'krad read %d'", r.t),
			})
			continue
		case r.err != nil:
			if ctx.Err() == nil || x.ctx.Err() != nil { // not one that --any cancelled
				errs = append(errs, r.err)
			}
			continue
		}
		if err := x.printAgent(r.a, r.raw); err != nil {
			return err
		}
		switch r.a.State {
		case api.StateFailed:
			ended = append(ended, &problem{
				err:  fmt.Errorf("%s failed (%s)", agentID(r.a), exitText(r.a)),
				hint: fmt.Sprintf("see its last output with 'krad read %d'", r.t),
			})
		case api.StateClosed:
			ended = append(ended, &problem{err: fmt.Errorf("%s was closed (%s)", agentID(r.a), exitText(r.a))})
		}
		if anyOne {
			cancel()
			break
		}
	}
	for _, group := range [][]error{errs, timedOut, ended} {
		switch len(group) {
		case 0:
			continue
		case 1:
			return group[0]
		}
		// Several of a kind: one error of that kind, whose message names them all.
		msgs := make([]string, len(group))
		for i, e := range group {
			msgs[i] = e.Error()
		}
		var p *problem
		if errors.As(group[0], &p) {
			return &problem{err: errors.New(strings.Join(msgs, "; ")), kind: p.kind, hint: p.hint}
		}
		return fmt.Errorf("%w (and: %s)", group[0], strings.Join(msgs[1:], "; "))
	}
	return nil
}
