package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/spf13/pflag"
)

// codeCommand is `krad code PATH[:LINE] [--wait]`: Code, the file opened in the person's editor.
func codeCommand() *command {
	var wait bool
	return &command{
		name:    "code",
		args:    "PATH[:LINE] [--wait]",
		summary: "open a file in the person's editor",
		help: `
Asks krad-ade to open PATH in the person's editor ([editor] in config.toml), at LINE when it is
given, like retry.go:42. PATH is taken from this terminal's folder; it must be in this terminal's
environment folder or its group's checkout. With --wait, krad returns when the editor exits (so
configure an editor command that waits, like code --wait), at most 2 minutes.`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&wait, "wait", false, "return once the editor has closed the file")
		},
		run: func(x *invocation, args []string) error {
			if len(args) != 1 {
				return x.usageError("%s needs one PATH[:LINE], like retry.go:42", x.path)
			}
			p, line, err := parseCodeTarget(args[0])
			if err != nil {
				return x.usageError("%v", err)
			}
			if !filepath.IsAbs(p) {
				if p, err = filepath.Abs(p); err != nil {
					return fmt.Errorf("find this terminal's folder: %w", err)
				}
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			body := &api.CodeBody{Path: p, Wait: wait}
			if line > 0 {
				body.Line = &line
			}
			return b.ok(x.ctx, api.NewRequest(api.Code, body))
		},
	}
}

// parseCodeTarget reads PATH[:LINE]: a last ":N" of digits is the line, anything else is all
// path (a file may have ':' in its name; name it with its line, or as ./a:b, to open it).
func parseCodeTarget(s string) (path string, line int, err error) {
	if s == "" {
		return "", 0, errors.New("the path is empty")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", 0, errors.New("the path holds a NUL byte")
	}
	if len(s) > api.MaxPath {
		return "", 0, fmt.Errorf("the path is longer than %d bytes", api.MaxPath)
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, 0, nil
	}
	digits := s[i+1:]
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return s, 0, nil
	}
	if i == 0 {
		return "", 0, errors.New("the path is empty: give PATH:LINE, like retry.go:42")
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 {
		return "", 0, errors.New("the line is a whole number from 1, like retry.go:42")
	}
	return s[:i], n, nil
}
