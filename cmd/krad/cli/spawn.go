package cli

import (
	"cmp"
	"fmt"

	"github.com/krad-ade/krad/api"
	"github.com/spf13/pflag"
)

// spawnCommand is `krad spawn -- CMD…`: Spawn.
func spawnCommand() *command {
	var title, group, prompt, agent string
	return &command{
		name:    "spawn",
		args:    "[--title T] [--group G] [--prompt P] [--json] (--agent A | -- CMD…)",
		summary: "start a worker of this lead's session",
		json:    `print the worker as one JSON object`,
		help: `
Starts CMD as a new worker of this lead's session, in a new terminal of its environment, and
prints it as krad check does:

  main:2 worker 'fix flaky test' working

If CMD fails at once (a command that does not exist, say), the worker is shown failed with its
exit code and krad exits 1. Only a session's lead may spawn workers. CMD and its arguments come
after --.

With --prompt, P is typed into the worker's terminal once the worker is ready to read (once it
shows anything: an agent's screen drawn, a shell's prompt; after 5 seconds if it shows nothing),
then Enter, as krad send does. krad spawn does not wait for that, but krad wait does: it returns
once the worker has reacted to P. P is never put on a command line, where every user of the host
sees it (ps). For an agent that takes its prompt only as an argument (claude -p), put the prompt
in CMD yourself, and know that ps shows it to every user of that host.

With --group, the worker works in group G: a git worktree of this environment's repository, on
its own branch (krad/G), made now if it does not exist (see krad worktree create). It starts in
the group's checkout with KRAD_ADE_GROUP=G and KRAD_ADE_PORT, the first of 10 ports of the
group's own. When the last terminal of a group closes, the group retires: its uncommitted work
is kept on a snapshot ref, its checkout removed, its branch kept unless it holds nothing; a
checkout with a repository of its own inside (a .git below it) is held instead, untouched (krad
groups says so). Without --group, the worker works where this lead does.

With --agent A, the worker runs the agent profile A that config.toml names ([[agent]]: its
command, and whether it takes the prompt typed in or as its last argument).`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&title, "title", "", "the worker's title `T`, one line of text (by default the program's name)")
			fs.StringVar(&group, "group", "", "the group `G` it works in, made if need be (by default this lead's own)")
			fs.StringVar(&agent, "agent", "", "run the agent profile `A` of config.toml ([[agent]]) instead of a CMD")
			fs.StringVar(&prompt, "prompt", "", "the first prompt `P`, typed into the worker once it is ready (never on a command line)")
		},
		run: func(x *invocation, args []string) error {
			switch {
			case agent != "" && len(args) > 0:
				return x.usageError("%s takes --agent or a command after --, not both", x.path)
			case agent == "" && len(args) == 0:
				return x.usageError("%s needs a command after --, like: %s -- claude, or an agent profile: --agent claude", x.path, x.path)
			}
			if title == "" {
				title = cmp.Or(agent, api.ProgramTitle(args))
			}
			if err := api.CheckTitle(title); err != nil {
				return x.usageError("%v", err)
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			body := &api.SpawnBody{Title: title, Command: args, Agent: agent, Prompt: prompt, Group: group}
			a, err := printAnswer(x, b, api.NewRequest(api.Spawn, body), x.writeAgent)
			if err != nil {
				return err
			}
			if a.State == api.StateFailed {
				return &problem{
					err:  fmt.Errorf("%s failed as it started (%s)", agentID(a), exitText(a)),
					hint: fmt.Sprintf("see what it printed with 'krad read %d'; 127 means the command was not found", a.Terminal),
				}
			}
			return nil
		},
	}
}
