package cli

import (
	"fmt"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/spf13/pflag"
)

// checkCommand is `krad check T`: Check, now or after the next change.
func checkCommand() *command {
	var wait *uint32
	return &command{
		name:    "check",
		args:    "T [--wait D] [--json]",
		summary: "print one agent's state, now or after its next change",
		json:    `print the agent as one JSON object`,
		help: `
Prints the agent of terminal T in one line: its terminal, role, state and title.

  main:2 worker 'fix flaky test' idle

T is a terminal of this terminal's own environment: its number, like 2, or main:2. With
--wait, the app answers after the agent's next change, or when D has passed: then krad prints
the agent as it is and exits 4 (timed out), as krad wait does.`,
		flags: func(fs *pflag.FlagSet) {
			fs.Var(secondsValue{&wait}, "wait", "answer after the agent's next change, or after `D` (like 30s or 5m; at most 30m)")
		},
		run: func(x *invocation, args []string) error {
			t, b, err := x.targetOnBus(args)
			if err != nil {
				return err
			}
			var before api.Agent
			if wait != nil {
				// The agent as it was before the wait, to tell a change from the wait's end: the
				// app answers the agent either way. A change between the two requests makes the
				// second answer differ from it, so none is missed.
				if _, err := b.answer(x.ctx, api.NewRequest(api.Check, &api.CheckBody{Target: t}), &before); err != nil {
					return err
				}
			}
			a, err := printAnswer(x, b, api.NewRequest(api.Check, &api.CheckBody{Target: t, WaitSecs: wait}), x.writeAgent)
			if err != nil {
				return err
			}
			if wait != nil && sameAgent(a, before) {
				// One rule with krad wait: a wait that ends with nothing to show exits 4.
				return &problem{err: fmt.Errorf("%s did not change in %v", a.ID(), time.Duration(*wait)*time.Second), kind: api.ErrTimedOut,
					hint: "wait longer (--wait 5m), or print the agent as it is now without --wait"}
			}
			return nil
		},
	}
}

// printAgent prints one agent: agentLine, or the app's JSON.
func (x *invocation) printAgent(a api.Agent, raw []byte) error {
	if x.json {
		return writeRaw(x.stdout, raw)
	}
	return x.writeAgent(a)
}

// writeAgent writes agentLine of a.
func (x *invocation) writeAgent(a api.Agent) error { return writeLine(x.stdout, agentLine(a)) }

// sameAgent says whether two answers show the agent unchanged: every field, the exit code by
// value.
func sameAgent(a, b api.Agent) bool {
	code := func(c *int) int {
		if c == nil {
			return -1 << 31
		}
		return *c
	}
	if code(a.ExitCode) != code(b.ExitCode) || !a.Since.Equal(b.Since) {
		return false
	}
	a.ExitCode, b.ExitCode, a.Since, b.Since = nil, nil, time.Time{}, time.Time{}
	return a == b
}
