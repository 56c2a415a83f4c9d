package cli

import (
	"errors"
	"fmt"

	"github.com/krad-ade/krad/api"
	"github.com/spf13/pflag"
)

// waitCommand is `krad wait T`: Wait, and an exit code that says how the agent settled.
func waitCommand() *command {
	var asJSON bool
	var timeout *uint32
	return &command{
		name:    "wait",
		args:    "T [--timeout D] [--json]",
		summary: "wait until an agent settles: idle, needs input, done, failed or closed",
		help: `
Waits until the agent of terminal T settles after this request: idle, needs_input, done,
failed or closed. Then it prints the agent as krad check does.

After krad send, it waits for the agent's reaction first: anything on its screen but the echo
of the text sent, or a report of its own. A command the text started in the foreground (typed
into a shell) is the agent at work until it shows something or ends, however long that takes.
Only an agent that shows nothing, reports nothing and starts no command for 10 s is taken as it
is. An agent whose environment is down is unreachable, which is not settled: krad wait goes on
waiting for its environment to come back.

T is a terminal of this terminal's own environment: its number, like 2, or main:2.

Exit codes: 0 the agent is idle, needs input or done · 1 it failed or was closed (krad says so
on stderr, with its exit code) · 4 it did not settle within the timeout · and the codes every
krad command has.`,
		flags: func(fs *pflag.FlagSet) {
			fs.Var(secondsValue{&timeout}, "timeout", "give up after `D` (like 30s or 5m; at most and by default 30m)")
			fs.BoolVar(&asJSON, "json", false, `print the agent as one JSON object`)
		},
		run: func(x *invocation, args []string) error {
			t, b, err := x.targetOnBus(args)
			if err != nil {
				return err
			}
			secs := timeout
			if secs == nil {
				max := uint32(api.MaxWait.Seconds())
				secs = &max
			}
			var a api.Agent
			// b.answer waits for the app's deadline, the timeout plus a second, and a little
			// more: the app answers TimedOut itself, and leaving early would cancel the Wait.
			raw, err := b.answer(x.ctx, api.NewRequest(api.Wait, &api.WaitBody{Target: t, TimeoutSecs: secs}), &a)
			if errors.Is(err, api.ErrTimedOut) {
				return &problem{
					err:  fmt.Errorf("terminal %d did not settle within %s: the app answered TimedOut", t, secondsValue{&secs}),
					kind: api.ErrTimedOut,
					hint: fmt.Sprintf("wait longer with --timeout, or see what it is doing with 'krad read %d'", t),
				}
			}
			if err != nil {
				return err
			}
			if err := x.printAgent(a, raw, asJSON); err != nil {
				return err
			}
			switch a.State {
			case api.StateFailed:
				return &problem{
					err:  fmt.Errorf("%s failed (%s)", agentID(a), exitText(a)),
					hint: fmt.Sprintf("see its last output with 'krad read %d'", t),
				}
			case api.StateClosed:
				return &problem{err: fmt.Errorf("%s was closed (%s)", agentID(a), exitText(a))}
			}
			return nil
		},
	}
}
