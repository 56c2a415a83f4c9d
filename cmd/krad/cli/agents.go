package cli

// agentsCommand is the tree of krad-ade-agents, the agents' companion.
func agentsCommand() *command {
	return &command{
		name: agentsName,
		help: `
krad-ade-agents is the agents' companion of krad-ade. krad-ade starts every worker through it:
"krad-ade-agents run -- CMD…" runs an agent command inside one of the app's terminals and reports
its start and its end (done or failed, with the exit code) to the agents bus. "krad-ade-agents
shell" starts the user's shell in a window opened by hand, once the app has numbered it.

For the bus itself, use krad.`,
		footer: `
Exit codes: run exits with its command's (128 plus the signal when a signal killed it, 127 when
the command is not found, 126 when it cannot run) · 5 usage.`,
		subs: []*command{
			agentsRunCommand(),
			agentsShellCommand(),
			agentsWorktreeCommand(),
			agentsListenersCommand(),
		},
	}
}
