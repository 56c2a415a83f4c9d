package cli

// agentsCommand is the tree of krad-ade-agents, the agents' companion. Its verbs come later.
func agentsCommand() *command {
	return &command{
		name: agentsName,
		help: `
krad-ade-agents is the agents' companion of krad-ade. krad-ade starts every worker through it:
"krad-ade-agents run -- CMD…" runs an agent command inside one of the app's terminals and reports
its state changes (working, idle, done, failed) to the agents bus.

This build has no commands yet; run comes with the next version. For the bus itself, use krad.`,
	}
}
