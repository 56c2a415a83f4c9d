package cli

import (
	"encoding/json"

	"github.com/krad-ade/krad/api"
)

// watchCommand is `krad watch`: SubscribeAgents, printed as it comes.
func watchCommand() *command {
	return &command{
		name:    "watch",
		args:    "[--json]",
		summary: "print the agents, then each change, until interrupted",
		json:    "print each message of the stream as one JSON line",
		help: `
Prints the agents as krad list does, then one line per change as it happens, until interrupted:

  main:2 worker 'fix flaky test' idle           an agent changed
  main:3 added worker 'review' starting         an agent was added (or removed)
  environment main down: ssh: connection lost   an environment went down (or up)

With --json, krad prints each message of the stream as the app sends it, one JSON line each,
written as it arrives: first {"Agents":[…]}, then {"AgentEvent":{"kind","agent"}} and
{"AppEvent":{"kind","environment","message"}}. A status bar can read it from a pipe. Lines of
kinds krad does not know are passed on with --json and left out without.

When the app ends the stream (it stopped or restarted), krad exits with 2.`,
		run: func(x *invocation, args []string) error {
			b, err := x.busNoArgs(args)
			if err != nil {
				return err
			}
			req := api.NewRequest(api.SubscribeAgents, nil)
			return b.subscribe(x.ctx, req, func(a api.Answer) error {
				if x.json {
					line, err := json.Marshal(a)
					if err != nil {
						return err
					}
					return writeLine(x.stdout, string(line))
				}
				if a.Name == api.AnswerAgents {
					var agents []api.Agent
					if err := a.Decode(api.AnswerAgents, &agents); err != nil {
						return b.unexpected(req, err)
					}
					return writeAgentTable(x.stdout, agents)
				}
				if line, ok := eventLine(a); ok {
					return writeLine(x.stdout, line)
				}
				return nil
			})
		},
	}
}
