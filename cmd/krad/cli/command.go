package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/internal/termsafe"
)

// command is a node of the tree: a command, a group of commands, or both (krad api, krad api
// info). A command with sub-commands takes no arguments of its own.
type command struct {
	name    string
	args    string // what follows the name in its usage line: "[--json]"
	summary string // one line, lower case, for the list of commands
	help    string // what --help says before the usage
	footer  string // what --help says after the flags
	// flags defines the command's flags on fs, binding them to variables of the run function.
	flags func(fs *pflag.FlagSet)
	// json, where the command has --json, is that flag's help: what it prints instead of its
	// lines. The flag comes after the command's own and sets [invocation.json].
	json string
	// run runs the command with the arguments left after the flags; nil for a group that needs a
	// sub-command.
	run  func(x *invocation, args []string) error
	subs []*command
	// hidden leaves the command out of its parent's list: it is for programs, not people
	// (krad-ade-agents worktree, which the app runs on SSH hosts).
	hidden bool
	// raw passes every argument to run as it is, none taken for a flag, but for --help alone:
	// a program calls it with arguments it did not choose (an agent's JSON).
	raw bool
}

func (c *command) sub(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

// dispatch finds the command args name, parses its flags and runs it.
func (x *invocation) dispatch(root *command, args []string) error {
	cmd := root
	x.path = root.name
	for len(args) > 0 {
		sub := cmd.sub(args[0])
		if sub == nil {
			break
		}
		cmd, x.path, args = sub, x.path+" "+sub.name, args[1:]
	}

	fs := pflag.NewFlagSet(x.path, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	if cmd.json != "" {
		fs.BoolVar(&x.json, "json", false, cmd.json)
	}
	help := fs.BoolP("help", "h", false, "print this help")
	if cmd.raw && cmd.run != nil && !(len(args) == 1 && (args[0] == "--help" || args[0] == "-h")) {
		return cmd.run(x, args)
	}
	if err := fs.Parse(args); err != nil {
		// pflag's messages quote the flag as typed; printable keeps it harmless.
		return x.usageError("%s", termsafe.Escape(err.Error(), 200))
	}
	switch {
	case *help:
		return writeHelp(x.stdout, cmd, x.path, fs)
	case fs.NArg() > 0 && (len(cmd.subs) > 0 || cmd.run == nil):
		return x.usageError("unknown command %s", quote(fs.Arg(0)))
	case cmd.run == nil:
		_ = writeHelp(x.stderr, cmd, x.path, fs)
		return errUsageShown
	}
	return cmd.run(x, fs.Args())
}

// writeHelp prints what --help prints: the help text, the usage, the commands below, the flags.
func writeHelp(w io.Writer, cmd *command, path string, fs *pflag.FlagSet) error {
	var b strings.Builder
	if cmd.help != "" {
		b.WriteString(strings.TrimSpace(cmd.help) + "\n\n")
	}
	b.WriteString("Usage:\n")
	if cmd.run != nil {
		fmt.Fprintf(&b, "  %s\n", strings.TrimSpace(path+" "+cmd.args))
	}
	if len(cmd.subs) > 0 || cmd.run == nil {
		fmt.Fprintf(&b, "  %s <command> [flags]\n", path)
	}
	if len(cmd.subs) > 0 {
		var rows [][2]string
		var walk func(prefix string, c *command)
		walk = func(prefix string, c *command) {
			for _, s := range c.subs {
				if s.hidden {
					continue
				}
				rows = append(rows, [2]string{prefix + s.name, s.summary})
				walk(prefix+s.name+" ", s)
			}
		}
		walk("", cmd)
		b.WriteString("\nCommands:\n" + formatRows(rows, "  "))
	}
	var flags [][2]string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden { // accepted, not offered (spawn's --group)
			return
		}
		name := "    --" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", --" + f.Name
		}
		varname, usage := pflag.UnquoteUsage(f)
		if varname != "" && f.Value.Type() != "bool" {
			name += " " + varname
		}
		flags = append(flags, [2]string{name, usage})
	})
	b.WriteString("\nFlags:\n" + formatRows(flags, "  "))
	if cmd.footer != "" {
		b.WriteString("\n" + strings.TrimSpace(cmd.footer) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
