package cli

import (
	"github.com/krad-ade/krad/api"
	"github.com/spf13/pflag"
)

// listCommand is `krad list`: List, or ListAll with --all.
func listCommand() *command {
	var all bool
	return &command{
		name:    "list",
		args:    "[--all] [--json]",
		summary: "list the agents of this terminal's group, or of its environment",
		json:    `print the agents as one JSON array of {"environment","terminal","title","role","state","session","group","exit_code","since","state_from","message"}`,
		help: `
Lists the agents: every terminal is one, as a shell, a session's lead or one of its workers.
In one of krad-ade's terminals, krad lists the terminals of its group (its worktree), and with
--all every terminal of its environment; outside them, every terminal of every open environment.

  TERMINAL  ROLE    STATE        FROM      TITLE
  main:1    lead    working      screen    claude
  main:2    worker  needs_input  reported  fix flaky test · Claude needs your permission to use Bash

FROM says where the state came from: reported, the agent told it itself (krad report, the hooks
of its CLI: see krad hooks), with what it said after its title; screen, the app read it from the
terminal (its output, a quiet spell, a job in its shell's foreground, its process's end). An
agent whose process ended shows its exit code: "done (0)", "failed (1)". The agents of an
environment that is down (its SSH host out of reach, its tmux not answering) are unreachable:
the app cannot tell what they do until the environment is back, when their states return.`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&all, "all", false, "list every terminal of this terminal's environment")
		},
		run: func(x *invocation, args []string) error {
			b, err := x.busNoArgs(args)
			if err != nil {
				return err
			}
			name := api.List
			if all {
				name = api.ListAll
			}
			var agents []api.Agent
			raw, err := b.answer(x.ctx, api.NewRequest(name, nil), &agents)
			if err != nil {
				return err
			}
			if x.json {
				if agents == nil {
					raw = []byte("[]") // "null" is no list
				}
				return writeRaw(x.stdout, raw)
			}
			return writeAgentTable(x.stdout, agents)
		},
	}
}
