package cli

import (
	"io"
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/spf13/pflag"
)

// readCommand is `krad read T`: Read, the screen printed as it is.
func readCommand() *command {
	var lines *int
	return &command{
		name:    "read",
		args:    "T [--lines N] [--json]",
		summary: "print an agent's screen",
		json:    `print {"terminal","text"}`,
		help: `
Prints the screen of terminal T as its text, or with --lines its last N lines. The text is
printed as the terminal shows it, not escaped: read it as you would the terminal itself.

T is a terminal of this terminal's own environment: its number, like 2, or main:2.`,
		flags: func(fs *pflag.FlagSet) {
			fs.Var(countValue{&lines}, "lines", "print only the last `N` lines")
		},
		run: func(x *invocation, args []string) error {
			t, b, err := x.targetOnBus(args)
			if err != nil {
				return err
			}
			_, err = printAnswer(x, b, api.NewRequest(api.Read, &api.ReadBody{Target: t, Lines: lines}), func(s api.Screen) error {
				text := s.Text
				if text != "" && !strings.HasSuffix(text, "\n") {
					text += "\n"
				}
				_, err := io.WriteString(x.stdout, text)
				return err
			})
			return err
		},
	}
}
