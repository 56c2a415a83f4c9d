package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/krad-ade/krad/api"
)

// agentsEndedCommand is `krad-ade-agents ended PANE STATUS SIGNAL`, hidden: tmux runs it when the
// process of a window that stays after its end (an agent's: remain-on-exit) has ended, through
// the pane-died hook the app sets on its tmux server. It reports that end to the app at once, as
// the window's terminal: the app's own watch of tmux (a subscription, which tmux checks once a
// second) would tell it up to a second or so later, and an agent that ended would meanwhile show
// the state it had before, idle after a quiet spell.
func agentsEndedCommand() *command {
	return &command{
		name:    "ended",
		args:    "PANE STATUS SIGNAL",
		summary: "report the end of a window's process (for tmux's pane-died hook)",
		hidden:  true,
		help: `
Reports to krad-ade that the process of tmux pane PANE (%N) ended: with exit status STATUS, or
killed by signal SIGNAL (one of them is empty, as tmux's #{pane_dead_status} and
#{pane_dead_signal} give them). The report is the end of the window's process, done for exit
status 0 and failed otherwise, with the exit code (128 plus the signal's number when a signal
killed it), made as the window's terminal, which it asks tmux for (the server in TMUX; the
window's @krad_terminal). The bus is found through the KRAD_ADE_* variables, which tmux gives
the commands it runs from the session's environment.

tmux runs it from the pane-died hook that krad-ade sets on its tmux server; tmux shows nothing
of what it prints. Nothing depends on it: when it cannot report, the app learns of the end from
tmux, a little later.`,
		run: func(x *invocation, args []string) error {
			if len(args) != 3 {
				return x.usageError("%s takes a pane, an exit status and a signal (either may be empty), as tmux gives them", x.path)
			}
			pane, status, signal := args[0], args[1], args[2]
			if !paneID(pane) {
				return x.usageError("%s is not a tmux pane (%%N)", quote(pane))
			}
			code, err := paneEndCode(status, signal)
			if err != nil {
				return x.usageError("%v", err)
			}
			id, ok := windowTerminal(x.ctx, func(key string) string {
				if key == "TMUX_PANE" {
					return pane
				}
				return x.env(key)
			}, 0)
			if !ok {
				return fmt.Errorf("the window of pane %s is no terminal of krad-ade's (no @krad_terminal), or tmux did not say", pane)
			}
			b, err := fromVariables(func(key string) string {
				if key == varTerminal {
					return id
				}
				return x.env(key)
			})
			if err != nil {
				return err
			}
			state := api.StateDone
			if code != 0 {
				state = api.StateFailed
			}
			body := &api.ReportBody{State: state, Lifecycle: true, ExitCode: &code}
			return b.okWithin(x.ctx, api.NewRequest(api.Report, body), reportWait)
		},
	}
}

// paneID reports whether s is a tmux pane id: % and a number.
func paneID(s string) bool {
	n, ok := strings.CutPrefix(s, "%")
	if !ok || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 32)
	return err == nil
}

// paneEndCode is the exit code of a dead pane's process from what tmux says of it: its exit
// status, or the signal that killed it, the other being empty.
func paneEndCode(status, signal string) (int, error) {
	switch {
	case status != "" && signal == "":
		n, err := strconv.ParseUint(status, 10, 8)
		if err != nil {
			return 0, fmt.Errorf("exit status %s is not a number from 0 to 255", quote(status))
		}
		return int(n), nil
	case signal != "" && status == "":
		n, err := strconv.ParseUint(signal, 10, 8)
		if err != nil || n < 1 || n > 127 {
			return 0, fmt.Errorf("signal %s is not a number from 1 to 127", quote(signal))
		}
		return signalExit(int(n)), nil
	}
	return 0, fmt.Errorf("give either an exit status or a signal, not %s and %s", quote(status), quote(signal))
}
