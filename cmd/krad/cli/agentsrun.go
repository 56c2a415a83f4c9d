package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/lockedwriter"
	"github.com/krad-ade/krad/internal/termsafe"
)

// agentsRunCommand is `krad-ade-agents run -- CMD…`.
func agentsRunCommand() *command {
	var title string
	var become, setup bool
	return &command{
		name:    "run",
		args:    "[--title T] [--exec] [--setup] -- CMD…",
		summary: "run an agent command in this terminal and report its start and end",
		help: `
Runs CMD in this terminal, its input and output the terminal's, and exits with its exit code
(128 plus the signal's number when a signal killed it). krad-ade hears that it started
(working) and how it ended (done, or failed with its exit code), through the KRAD_ADE_*
variables as any krad command does. These reports mark a start and an end only: while CMD runs,
its own output or its own krad report calls say whether it works or waits.

With --exec, krad-ade-agents reports the start and then becomes CMD (it execs it), so that no
process of its own stays beside CMD, and reports no end: the app opens its agents' windows so,
CMD being the window's own process, whose end tmux tells the app (remain-on-exit, the pane's
exit status or signal). Without --exec it waits for CMD, as in a shell, to report the end.

A report never stops CMD: one that fails, outside the app for one, is a single warning on
stderr, and none waits more than 2 seconds (with --exec, CMD starts once its start is reported).
A CMD that does not exist exits with 127, and one that cannot run with 126; either is reported
failed. A CMD whose terminal hung up before it started (its window was closed as it opened) is
not started, and krad-ade-agents exits with 129, as a hangup would end it.

CMD shares the terminal's process group, so Ctrl-C and window size changes reach it directly;
SIGTERM and SIGHUP sent to krad-ade-agents are passed on to it (with --exec, krad-ade-agents
is CMD: they are CMD's own).

With --setup (krad-ade sets it for the terminals of a group whose setup is not done), it first
runs the setup command of the group this terminal works in (KRAD_ADE_GROUP, its checkout the
current folder), as config.toml's [[setup]] command names it: in this terminal, its output shown
here, within its time limit. A terminal that comes while another runs it waits for that run.
CMD starts once the setup is done; when it failed, CMD does not run, and krad-ade-agents exits
with the setup's exit code (1 when it has none).`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&title, "title", "", "also set the terminal's title to `T`")
			fs.BoolVar(&become, "exec", false, "report the start, then become CMD: the end is for tmux to tell")
			fs.BoolVar(&setup, "setup", false, "run (or wait for) the group's setup before CMD")
		},
		run: func(x *invocation, args []string) error {
			if len(args) == 0 {
				return x.usageError("%s needs a command after --, like: %s -- claude", x.path, x.path)
			}
			setTitle(x.stdout, title)
			if become {
				return x.execReported(args, setup)
			}
			return x.runReported(args, setup)
		},
	}
}

// execReported reports argv's start and replaces krad-ade-agents with it (execve): from then on
// this process, its pid, terminal and signals are argv's, and its end is the end of the
// window's process, which tmux tells the app. It returns only when argv cannot start, as an
// *exited with the code a shell gives; with setup, after its group's setup (setUp), and not at
// all when that failed.
func (x *invocation) execReported(argv []string, setup bool) error {
	r, path, err := x.prepareReported(argv, setup)
	if err != nil {
		return err
	}
	// Before the exec, since nothing of krad-ade-agents is left after it: the report holds argv
	// up for one answer of the app's, reportWait at most.
	r.report(api.StateWorking, nil)
	if terminalHungUp(os.Stdin) {
		return hungUp(argv[0])
	}
	err = execProgram(path, argv, os.Environ())
	if err == nil {
		return nil // only a test's execProgram returns
	}
	return r.notStarted(argv[0], err, false)
}

// hungUp is the end of a command not started because its terminal hung up first: its window
// was closed while krad-ade-agents started (a Close right after the Spawn). tmux closes a window
// by closing its terminal, and only the kernel's hangup of that terminal ends what runs there: a
// process that starts on a terminal already hung up is never sent one (the hangup came before
// it could take the terminal as its own), and a command started then, a build loop or a sleep,
// would run on with no window, no way to be seen and no end. The exit code is a hangup's.
func hungUp(name string) error {
	return &exited{code: 128 + int(syscall.SIGHUP), err: fmt.Errorf("%s: not started: the terminal hung up first (its window was closed)", quote(name))}
}

// prepareReported is what both ways of running argv begin with: its reporter, its group's setup
// (with setup: setUp), and argv's program found on PATH. An error is the command's end: argv did
// not start, and the app was told.
func (x *invocation) prepareReported(argv []string, setup bool) (*reporter, string, error) {
	r := x.reporter()
	if setup {
		if err := x.setUp(r); err != nil {
			return nil, "", err
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, "", r.notStarted(argv[0], err, true)
	}
	return r, path, nil
}

// runReported runs argv as a child in this terminal, reports its start and end, and returns its
// exit code as an *exited; with setup, after its group's setup (setUp).
func (x *invocation) runReported(argv []string, setup bool) error {
	if _, ok := x.stderr.(*os.File); !ok {
		// The child's stderr is copied into x.stderr while a report may warn there.
		x.stderr = lockedwriter.New(x.stderr)
	}
	r, path, err := x.prepareReported(argv, setup)
	if err != nil {
		return err
	}
	if f, ok := x.stdin.(*os.File); ok && terminalHungUp(f) {
		r.report(api.StateFailed, new(int(128+syscall.SIGHUP)))
		return hungUp(argv[0])
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = x.stdin, x.stdout, x.stderr

	// Listen before the child starts, so that no signal meant for it can end krad-ade-agents
	// first. SIGINT and SIGQUIT come from the terminal to the whole foreground process group,
	// the child included: krad-ade-agents only has to outlive them to report the end.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return r.notStarted(argv[0], err, false)
	}
	started := make(chan struct{})
	go func() {
		defer close(started)
		r.report(api.StateWorking, nil)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	for done := false; !done; {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGTERM || sig == syscall.SIGHUP {
				_ = cmd.Process.Signal(sig)
			}
		case err = <-waited:
			done = true
		}
	}
	<-started
	if cmd.ProcessState == nil {
		r.report(api.StateFailed, nil)
		return &exited{code: ExitFailed, err: fmt.Errorf("wait for %s: %w", quote(argv[0]), err)}
	}
	code := exitStatus(cmd.ProcessState)
	state := api.StateDone
	if code != 0 {
		state = api.StateFailed
	}
	r.report(state, &code)
	return &exited{code: code}
}

// exitStatus is a finished process's exit code the way shells give it: 128 plus the signal's
// number when a signal killed it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return signalExit(int(ws.Signal()))
	}
	return ps.ExitCode()
}

// signalExit is the exit code of a process that signal n killed, as shells give it.
func signalExit(n int) int { return 128 + n }

// reporter sends krad-ade-agents run's reports. Each waits at most reportWait; after one fails,
// with its one warning, the others are not tried, since they would fail and wait the same way.
// Reports go one at a time: the end waits for the start.
type reporter struct {
	x *invocation
	b *bus // nil once there is no point in trying: no bus, or a report failed
}

// reporter finds the bus through the variables only: a report is a terminal's, and api.json's
// Client may not make one.
func (x *invocation) reporter() *reporter {
	if x.env(varTerminal) == "" {
		x.warn("KRAD_ADE_TERMINAL is not set, so this is not one of krad-ade's terminals: the command runs without state reports")
		return &reporter{x: x}
	}
	b, err := fromVariables(x.env)
	if err != nil {
		x.warn("the command runs without state reports: %v", err)
		return &reporter{x: x}
	}
	return &reporter{x: x, b: b}
}

// report tells the bus the command's state, as a lifecycle report.
func (r *reporter) report(state api.State, exitCode *int) {
	r.send(&api.ReportBody{State: state, Lifecycle: true, ExitCode: exitCode})
}

// send makes the lifecycle report body.
func (r *reporter) send(body *api.ReportBody) {
	if r.b == nil {
		return
	}
	state := body.State
	// Not r.x.ctx: an interrupt that cancels it reached the command too, and its end is still
	// worth reporting.
	ctx := context.WithoutCancel(r.x.ctx)
	if err := r.b.okWithin(ctx, api.NewRequest(api.Report, body), reportWait); err != nil {
		r.b = nil
		r.x.warn("the state %s did not reach krad-ade, and the command runs on without reports: %v", state, err)
	}
}

// notStarted reports and returns a command that could not start, with the exit codes shells
// give: 127 when it does not exist, 126 when it exists but cannot run. looked says that err is
// exec.LookPath's, whose "does not exist" means the command's; after it, a file that does not
// exist is the one a script names on its #! line.
func (r *reporter) notStarted(name string, err error, looked bool) error {
	var ee *exec.Error
	var pe *fs.PathError
	switch {
	case errors.As(err, &ee):
		err = ee.Err
	case errors.As(err, &pe):
		err = pe.Err
	}
	code, why := 126, fmt.Errorf("%s: cannot run: %w", quote(name), err)
	switch {
	case looked && (errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist)):
		code, why = 127, fmt.Errorf("%s: command not found", quote(name))
	case errors.Is(err, fs.ErrNotExist):
		code = 127
	}
	r.report(api.StateFailed, &code)
	return &exited{code: code, err: why}
}

// setTitle sets the terminal's title to title (OSC 2), when title is set and w is a terminal.
// What a terminal would act on in title is escaped.
func setTitle(w io.Writer, title string) {
	f, ok := w.(*os.File)
	if title == "" || !ok {
		return
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		return
	}
	_, _ = io.WriteString(f, "\x1b]2;"+termsafe.Escape(title, api.MaxTitle)+"\x07")
}
