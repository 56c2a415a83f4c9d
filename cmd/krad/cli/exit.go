package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/krad-ade/krad/api"
)

// The exit codes of krad and krad-ade-agents; [ExitCodes] says what each means.
const (
	ExitOK                 = 0
	ExitFailed             = 1
	ExitNoAPI              = 2
	ExitUnauthorized       = 3
	ExitTimedOut           = 4
	ExitUsage              = 5
	ExitUnsupportedVersion = 6
)

// ExitCode is one row of the exit-code table: the code, what it means in short (krad --help's
// footer), and in full, in Markdown (README.md's table).
type ExitCode struct {
	Code        int
	Short, Long string
}

// ExitCodes is the one table of krad's exit codes. krad --help's footer is made from it, and
// README.md's table "Exit codes of krad" is tested equal to it (TestExitCodesDocumented).
var ExitCodes = []ExitCode{
	{ExitOK, "success", "success"},
	{ExitFailed, "the app answered an error, or another failure",
		"the app answered an error (`not_found`, `conflict`, `bad_request`, `unavailable`, `internal`), its answer was longer than krad reads (32 MiB: \"the answer is longer than 32 MiB\"), or another failure"},
	{ExitNoAPI, "no live API",
		"no live API: nothing answers, `api.json` is stale, no endpoint was found, or the listener at the endpoint is another user's (the token is not sent to it)"},
	{ExitUnauthorized, "unauthorized or forbidden",
		"`unauthorized` or `forbidden`, or no token krad may use (malformed, or a token file that is missing or not owner-only)"},
	{ExitTimedOut, "timed out", "timed out: the app answered `\"TimedOut\"`, or `krad check --wait` saw no change"},
	{ExitUsage, "usage", "usage: bad flags or arguments"},
	{ExitUnsupportedVersion, "unsupported API version", "the app answered `unsupported_api_version`"},
}

// exitCodesParagraph is the table in short, for krad --help: one paragraph, its lines at most
// 100 columns, broken between codes.
func exitCodesParagraph() string {
	var b strings.Builder
	line := "Exit codes:"
	for i, e := range ExitCodes {
		item := fmt.Sprintf("%d %s", e.Code, e.Short)
		if i < len(ExitCodes)-1 {
			item += " ·"
		}
		if len(line)+1+len(item) > 100 {
			b.WriteString(line + "\n")
			line = item
			continue
		}
		line += " " + item
	}
	b.WriteString(line)
	return b.String()
}

// The kinds of failure that are krad's own rather than the app's answers. A *problem carries one.
var (
	errNoAPI   = errors.New("no live agents API")
	errNoToken = errors.New("no usable token")
	errUsage   = errors.New("usage")
)

// exitCode is the one table from what went wrong to the exit code.
func exitCode(err error) int {
	var (
		answered    *api.Error
		unreachable *api.UnreachableError
		child       *exited
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &child):
		return child.code
	case errors.Is(err, errUsage):
		return ExitUsage
	case errors.Is(err, errNoAPI), errors.As(err, &unreachable):
		return ExitNoAPI
	case errors.Is(err, errNoToken):
		return ExitUnauthorized
	case errors.Is(err, api.ErrTimedOut):
		return ExitTimedOut
	case errors.As(err, &answered):
		switch answered.Code {
		case api.CodeUnauthorized, api.CodeForbidden:
			return ExitUnauthorized
		case api.CodeUnsupportedAPIVersion:
			return ExitUnsupportedVersion
		}
	}
	return ExitFailed
}

// problem is an error a person reads: err says what failed, kind (one of the errNoAPI family, or
// nil) decides the exit code where err's own type does not, and hint is the next step.
type problem struct {
	err  error
	kind error
	hint string
}

func (p *problem) Error() string { return p.err.Error() }
func (p *problem) Unwrap() error { return p.err }

// Is makes errors.Is(err, errNoAPI) true for a problem of that kind.
func (p *problem) Is(target error) bool { return p.kind != nil && target == p.kind }

// WithHint is err with hint, the next step for the person, which krad prints after it as its
// hint line ("krad: hint: …"): for the errors of the packages that serve krad's commands (krad
// mcp's server, its launch from krad-ade's program).
func WithHint(err error, hint string) error { return &problem{err: err, hint: hint} }

// hintOf is the hint of the outermost problem in err's chain that has one (WithHint's too).
func hintOf(err error) string {
	for err != nil {
		if p, ok := err.(*problem); ok && p.hint != "" {
			return p.hint
		}
		err = errors.Unwrap(err)
	}
	return ""
}

// errUsageShown says that the usage went to stderr already: only the exit code is left to give.
var errUsageShown = &problem{err: errors.New("usage shown"), kind: errUsage}

// exited is the exit code krad-ade-agents run passes on from its command: the command's own, 128
// plus the signal that killed it, or 127 and 126 when it could not start. err says why when it
// could not start; nil means there is nothing to say, since the command spoke for itself.
type exited struct {
	code int
	err  error
}

func (e *exited) Error() string {
	if e.err == nil {
		return fmt.Sprintf("the command exited with %d", e.code)
	}
	return e.err.Error()
}

func (e *exited) Unwrap() error { return e.err }

// silent reports whether err is only an exit code, with nothing to print.
func silent(err error) bool {
	var e *exited
	return err == errUsageShown || errors.As(err, &e) && e.err == nil
}
