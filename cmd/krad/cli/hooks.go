package cli

import (
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/agenthooks"
)

// hooksCommand is `krad hooks --print-config claude|codex|gemini`: the hooks by which an agent
// tells krad-ade its own state, for the agent's own settings.
func hooksCommand() *command {
	var printConfig string
	kinds := strings.Join(agenthooks.Kinds, "|")
	return &command{
		name:    "hooks",
		args:    "--print-config " + kinds,
		summary: "print the hooks that make an agent's CLI tell krad-ade its state, for its settings",
		help: `
An agent whose CLI krad-ade knows (Claude Code, Codex, Gemini CLI) can tell krad-ade its own
state through hooks: the prompt it took (working), the permission it asks for (needs_input,
with its message), its turn's end (idle). krad-ade installs them itself in the agents it starts
from an [[agent]] profile with a kind, without touching your settings files. For an agent you
start yourself in one of krad-ade's terminals, add what

  krad hooks --print-config claude

prints to that agent's own settings. The hooks call krad-ade-agents hook, which tells no one
outside krad-ade's terminals, so they can stay in your settings.`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&printConfig, "print-config", "", "print what adds the hooks to `CLI`'s settings ("+strings.Join(agenthooks.Kinds, ", ")+"), and exit")
		},
		run: func(x *invocation, args []string) error {
			if err := x.noArgs(args); err != nil {
				return err
			}
			if printConfig == "" {
				return x.usageError("%s needs --print-config %s", x.path, kinds)
			}
			text, ok := agenthooks.PrintConfig(printConfig)
			if !ok {
				return x.usageError("--print-config takes %s, not %s", strings.Join(agenthooks.Kinds, ", "), quote(printConfig))
			}
			_, err := io.WriteString(x.stdout, text)
			return err
		},
	}
}
