package cli

// agentsCommand is the tree of krad-ade-agents, the agents' companion.
func agentsCommand() *command {
	return &command{
		name: agentsName,
		help: `
krad-ade-agents is the agents' companion of krad-ade. krad-ade starts every worker through it:
"krad-ade-agents run --exec -- CMD…" reports an agent command's start to the agents bus and
becomes the command, the window's own process, whose end (done or failed, with the exit code)
tmux tells the app. In a shell, "krad-ade-agents run -- CMD…" reports the start and the end
itself. "krad-ade-agents shell" starts the user's shell in a window opened by hand, once the app
has numbered it.

For the bus itself, use krad.`,
		footer: `
Exit codes: run exits with its command's (128 plus the signal when a signal killed it, 127 when
the command is not found, 126 when it cannot run) · 5 usage.`,
		subs: []*command{
			agentsRunCommand(),
			agentsShellCommand(),
			agentsHookCommand(),
			agentsHooksFileCommand(),
			agentsWorktreeCommand(),
			agentsEndedCommand(),
			agentsListenersCommand(),
		},
	}
}
