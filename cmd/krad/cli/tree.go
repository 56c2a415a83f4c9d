package cli

// kradCommand is the tree of krad. A new command is a file with its constructor, listed here.
func kradCommand() *command {
	return &command{
		name: "krad",
		help: `
krad talks to the agents bus of krad-ade, the app that runs coding agents in terminals on this
computer and on SSH hosts.`,
		footer: `
A target T is a terminal of this terminal's own environment: its number, like 2, or main:2.
Every command that prints data takes --json.

krad finds the bus through the KRAD_ADE_* variables the app sets in its terminals, else through
api.json in the app's config folder (not in the static build for SSH hosts).

` + exitCodesParagraph(),
		subs: []*command{
			listCommand(),
			watchCommand(),
			checkCommand(),
			waitCommand(),
			readCommand(),
			sendCommand(),
			spawnCommand(),
			closeCommand(),
			closeSessionCommand(),
			worktreeCommand(),
			groupsCommand(),
			retireCommand(),
			pushCommand(),
			prCommand(),
			changesCommand(),
			variantsCommand(),
			reportCommand(),
			hooksCommand(),
			toolCommand(),
			codeCommand(),
			mcpCommand(),
			apiCommand(),
			versionCommand(),
		},
	}
}
