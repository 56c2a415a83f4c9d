package cli

import (
	"github.com/krad-ade/krad/api"
	"github.com/spf13/pflag"
)

// checkCommand is `krad check T`: Check, now or after the next change.
func checkCommand() *command {
	var asJSON bool
	var wait *uint32
	return &command{
		name:    "check",
		args:    "T [--wait D] [--json]",
		summary: "print one agent's state, now or after its next change",
		help: `
Prints the agent of terminal T in one line: its terminal, role, state and title.

  main:2 worker 'fix flaky test' idle

T is a terminal of this terminal's own environment: its number, like 2, or main:2. With
--wait, the app answers after the agent's next change, or when D has passed.`,
		flags: func(fs *pflag.FlagSet) {
			fs.Var(secondsValue{&wait}, "wait", "answer after the agent's next change, or after `D` (like 30s or 5m; at most 30m)")
			fs.BoolVar(&asJSON, "json", false, `print the agent as one JSON object`)
		},
		run: func(x *invocation, args []string) error {
			t, b, err := x.targetOnBus(args)
			if err != nil {
				return err
			}
			var a api.Agent
			raw, err := b.answer(x.ctx, api.NewRequest(api.Check, &api.CheckBody{Target: t, WaitSecs: wait}), &a)
			if err != nil {
				return err
			}
			return x.printAgent(a, raw, asJSON)
		},
	}
}

// printAgent prints one agent: agentLine, or the app's JSON.
func (x *invocation) printAgent(a api.Agent, raw []byte, asJSON bool) error {
	if asJSON {
		return writeRaw(x.stdout, raw)
	}
	return writeLine(x.stdout, agentLine(a))
}
