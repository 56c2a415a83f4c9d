package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/spf13/pflag"
)

// sendCommand is `krad send T TEXT…`: Send.
func sendCommand() *command {
	var noEnter bool
	return &command{
		name:    "send",
		args:    "T TEXT… [--no-enter]",
		summary: "type text into one of this lead's workers, then Enter",
		help: `
Types TEXT into terminal T, the words joined by single spaces, then presses Enter. With - as the
only TEXT, krad reads the text from stdin, and drops one newline at its end. Only a session's
lead may send to its workers. A TEXT that starts with - comes after --: krad send 2 -- -v.

T is a terminal of this terminal's own environment: its number, like 2, or main:2.`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&noEnter, "no-enter", false, "type the text without pressing Enter")
		},
		run: func(x *invocation, args []string) error {
			if len(args) < 2 {
				return x.usageError("%s needs a target and the text to send", x.path)
			}
			t, err := x.target(args[0])
			if err != nil {
				return err
			}
			text := strings.Join(args[1:], " ")
			if len(args) == 2 && args[1] == "-" {
				if text, err = x.readStdin(); err != nil {
					return err
				}
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			body := &api.SendBody{Target: t, Text: text}
			if noEnter {
				body.Enter = new(false)
			}
			return b.ok(x.ctx, api.NewRequest(api.Send, body))
		},
	}
}

// readStdin reads the text of `krad send T -`: at most one request line's worth, without its
// last newline.
func (x *invocation) readStdin() (string, error) {
	if x.stdin == nil {
		return "", nil
	}
	b, err := io.ReadAll(io.LimitReader(x.stdin, api.MaxRequestLine+1))
	if err != nil {
		return "", fmt.Errorf("read the text from stdin: %w", err)
	}
	if len(b) > api.MaxRequestLine {
		return "", &problem{
			err:  fmt.Errorf("the text on stdin is longer than %d bytes, the most a request may carry", api.MaxRequestLine),
			kind: errUsage,
			hint: "send it in parts",
		}
	}
	s := string(b)
	if t, ok := strings.CutSuffix(s, "\r\n"); ok {
		return t, nil
	}
	return strings.TrimSuffix(s, "\n"), nil
}
