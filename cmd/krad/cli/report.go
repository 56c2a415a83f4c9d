package cli

import (
	"slices"
	"strings"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/spf13/pflag"
)

// reportStates are the states an agent may report, in the order help lists them.
var reportStates = func() []string {
	names := make([]string, len(api.Reportable))
	for i, s := range api.Reportable {
		names[i] = string(s)
	}
	return names
}()

// reportCommand is `krad report STATE`: Report, for an agent's hooks.
func reportCommand() *command {
	var message string
	return &command{
		name:    "report",
		args:    "STATE [--message M]",
		summary: "tell the app this agent's own state (for an agent's hooks)",
		help: `
Tells krad-ade the state of the agent in this terminal, as the agent sees it. STATE is one of
working, idle, needs_input, done or failed. It is meant for an agent's hooks: it prints nothing
when it succeeds, and makes one request, without a Hello first.

Once an agent reports, the app believes its reports rather than guessing from its output.`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&message, "message", "", "the message `M`: why, in a few words, for people")
		},
		run: func(x *invocation, args []string) error {
			if len(args) != 1 {
				return x.usageError("%s needs one state: %s", x.path, strings.Join(reportStates, ", "))
			}
			state := args[0]
			if !slices.Contains(reportStates, state) {
				return x.usageError("unknown state %s: the states are %s", quote(state), strings.Join(reportStates, ", "))
			}
			if len(message) > api.MaxReportMessage {
				return x.usageError("the message is longer than %d bytes", api.MaxReportMessage)
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			return b.okWithin(x.ctx, api.NewRequest(api.Report, &api.ReportBody{State: api.State(state), Message: message}), reportWait)
		},
	}
}

// reportWait is how long a report waits for its answer. An agent's hook, or a command that
// krad-ade-agents run starts, must not hang on a busy app: a late state is worth little anyway.
const reportWait = 2 * time.Second
