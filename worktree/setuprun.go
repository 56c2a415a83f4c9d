package worktree

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/atomicfile"
	"github.com/krad-ade/krad/internal/termsafe"
)

// A group's setup is a command of the person's config (SetupRule.Command) that readies a new
// checkout (npm ci, make tools). Create records it with the group, pending; the group's first
// terminal runs it (RunSetup: krad-ade-agents run --setup) before its own command, so that a
// long install runs where the person can watch it and holds up no request. Its record, beside
// the group's in the worktree's admin folder, says how it went, for `krad groups`, for a Spawn
// into the group (refused when it failed) and for the app's retire (a group whose setup failed
// is kept for the person to look at).

// The states of a group's setup.
const (
	// SetupPending: no terminal has run it yet (or the one that ran it was closed midway: the
	// next runs it again).
	SetupPending = "pending"
	// SetupRunning: a terminal of the group runs it now (Setup.Terminal).
	SetupRunning = api.SetupRunning
	// SetupDone: it ended with exit code 0.
	SetupDone = api.SetupDone
	// SetupFailed: it ended otherwise, or was stopped at its time limit (Setup.Why).
	SetupFailed = api.SetupFailed
)

// DefaultSetupTimeout is a setup's time limit when the config gives none; MaxSetupTimeout the
// most it may give.
const (
	DefaultSetupTimeout = 10 * time.Minute
	MaxSetupTimeout     = 2 * time.Hour
)

// setupGrace is how long a setup stopped at its limit has between SIGTERM and SIGKILL. Tests
// shorten it.
var setupGrace = 5 * time.Second

// setupTail is how much of a setup's output its record keeps: the end, where a failure says why.
const setupTail = 8 << 10

// The files of a group's setup, in the worktree's admin folder: its record, and the lock its
// runner holds while it runs (a flock, dropped by the kernel however the runner ends).
const (
	setupFile     = "krad-setup.json"
	setupLockFile = "krad-setup.lock"
)

// Setup is a group's setup command and how it went.
type Setup struct {
	Command     string `json:"command"`
	TimeoutSecs int    `json:"timeout_secs"`
	State       string `json:"state"`
	// Terminal is the terminal that runs it, or ran it ("main:3").
	Terminal string     `json:"terminal,omitempty"`
	Started  *time.Time `json:"started,omitempty"`
	Ended    *time.Time `json:"ended,omitempty"`
	ExitCode *int       `json:"exit_code,omitempty"`
	// Why says how a failed setup ended ("exited with 1", "stopped at its time limit of
	// 10m0s"), or why a pending one runs again.
	Why string `json:"why,omitempty"`
	// Output is the end of a failed setup's output, as it printed it: escape it to show it.
	Output string `json:"output,omitempty"`
}

// OutputTail is the last lines of s's output, at most lines of them and about max bytes,
// escaped for a terminal and indented, for a message; "" when there is none.
func (s *Setup) OutputTail(lines, max int) string {
	out := strings.TrimRight(s.Output, "\n")
	if out == "" {
		return ""
	}
	all := strings.Split(out, "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	text := strings.Join(all, "\n")
	if len(text) > max {
		text = "…" + text[len(text)-max:]
	}
	var b strings.Builder
	for l := range strings.SplitSeq(text, "\n") {
		b.WriteString("  | ")
		b.WriteString(termsafe.Escape(strings.TrimRight(l, "\r"), max))
		b.WriteByte('\n')
	}
	return b.String()
}

// FailedMessage says that group g's setup failed, how, what the person can do, and the end of
// its output: what a Spawn into the group is refused with.
func (s *Setup) FailedMessage(g Group) string {
	msg := fmt.Sprintf("group %s's setup failed (%s, in terminal %s): a worker does not start in a checkout that is not set up. The group is kept for you to look at, in %s: retire it (krad retire %s) and make it again once the setup is fixed in config.toml ([[setup]] command)",
		g.Name, s.Why, cmp.Or(s.Terminal, "?"), termsafe.Quote(g.Dir), g.Name)
	if tail := s.OutputTail(20, 2000); tail != "" {
		msg += ". Its output ends:\n" + strings.TrimRight(tail, "\n")
	}
	return msg
}

// readSetup reads the setup record in admin: nil when the group has none.
func readSetup(admin string) (*Setup, error) {
	data, err := os.ReadFile(filepath.Join(admin, setupFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s Setup
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("the setup record %s: %w", termsafe.Quote(filepath.Join(admin, setupFile)), err)
	}
	return &s, nil
}

// writeSetup writes the setup record in admin, whole.
func writeSetup(admin string, s *Setup) error {
	s.Output = strings.ToValidUTF8(s.Output, "\uFFFD")
	data, _ := json.Marshal(s)
	return atomicfile.WriteFileUnsynced(filepath.Join(admin, setupFile), append(data, '\n'), 0o600)
}

// newSetup is the record of rule's setup for a new group, pending; nil for a rule without one.
func newSetup(rule *SetupRule) *Setup {
	if rule == nil || rule.Command == "" {
		return nil
	}
	limit := time.Duration(rule.TimeoutSecs) * time.Second
	if limit <= 0 {
		limit = DefaultSetupTimeout
	}
	return &Setup{Command: rule.Command, TimeoutSecs: int(min(limit, MaxSetupTimeout) / time.Second), State: SetupPending}
}

// SetupRun is a run of a group's setup by one of its terminals: RunSetup's options.
type SetupRun struct {
	// Dir is the group's checkout, Group its name.
	Dir, Group string
	// Terminal is the terminal that runs it ("main:3"), for the record.
	Terminal string
	// Env is the command's environment (the terminal's own); KRAD_ADE_GROUP and KRAD_ADE_PORT
	// are set in it from the group's record.
	Env []string
	// Out is where its output goes (the terminal), beside the record's tail of it.
	Out io.Writer
	// Running is called once this terminal is about to run the setup; Waiting when another
	// terminal runs it and this one waits for it to end.
	Running, Waiting func(Setup)
}

// RunSetup runs group o.Group's setup, once: the first terminal of the group to come runs it;
// one that comes while it runs waits for it to end; one that comes after gets how it went. It
// returns the setup's record once it has ended (Done or Failed), or nil when the group has none.
// The command runs in the checkout, through sh -c, in a process group of its own (stdin
// /dev/null, its output to o.Out), within its time limit: past it, the whole process group is
// sent SIGTERM, then SIGKILL after a grace of a few seconds, and the setup has failed. ctx ending
// (the terminal closing) stops it the same way, and leaves it pending for the group's next
// terminal. The error is for what kept it from running at all.
func RunSetup(ctx context.Context, o SetupRun) (*Setup, error) {
	r, err := Open(ctx, o.Dir)
	if err != nil {
		return nil, err
	}
	g, err := r.group(ctx, o.Group)
	if err != nil {
		return nil, err
	}
	s, err := readSetup(g.admin)
	if err != nil || s == nil || s.State == SetupDone || s.State == SetupFailed {
		return s, err
	}
	unlock, waited, err := lockSetup(ctx, g.admin, func() {
		if o.Waiting != nil {
			if now, _ := readSetup(g.admin); now != nil {
				o.Waiting(*now)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("set group %s up: %w", o.Group, err)
	}
	defer unlock()
	if waited {
		if s, err = readSetup(g.admin); err != nil || s == nil || s.State == SetupDone || s.State == SetupFailed {
			return s, err
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	s.State, s.Terminal, s.Started, s.Ended, s.ExitCode, s.Why, s.Output = SetupRunning, o.Terminal, &now, nil, nil, "", ""
	if err := writeSetup(g.admin, s); err != nil {
		return nil, fmt.Errorf("set group %s up: %w", o.Group, err)
	}
	if o.Running != nil {
		o.Running(*s)
	}
	env := append(append([]string(nil), o.Env...), api.GroupEnv(g.Name, g.Port)...)
	run := runSetupCommand(ctx, g.Dir, s, env, o.Out)
	end := time.Now().UTC().Truncate(time.Second)
	s.Ended = &end
	switch {
	case run.interrupted:
		s.State, s.Why, s.Started, s.Ended = SetupPending, "its terminal closed before it ended, so the group's next terminal runs it again", nil, nil
	case run.code == 0 && run.why == "":
		s.State = SetupDone
	default:
		s.State, s.Why, s.Output = SetupFailed, run.why, run.tail
		s.ExitCode = &run.code
	}
	if err := writeSetup(g.admin, s); err != nil {
		return nil, fmt.Errorf("set group %s up: record how it went (%s): %w", o.Group, s.State, err)
	}
	return s, nil
}

// setupRun is how a setup's command ended.
type setupRun struct {
	code        int    // its exit code (128 + the signal's for one that killed it); -1 unknown
	why         string // "" for exit code 0; else how it ended
	tail        string // the end of its output
	interrupted bool   // ctx ended first: stopped, not failed
}

// ignoreErrors writes to w and never fails, so that a terminal gone does not stop the setup's
// output from reaching its record.
type ignoreErrors struct{ w io.Writer }

func (i ignoreErrors) Write(p []byte) (int, error) {
	if i.w != nil {
		_, _ = i.w.Write(p)
	}
	return len(p), nil
}
