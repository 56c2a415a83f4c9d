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
	"sync"
	"syscall"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/spf13/pflag"
)

// agentsRunCommand is `krad-ade-agents run -- CMD…`.
func agentsRunCommand() *command {
	var title string
	return &command{
		name:    "run",
		args:    "[--title T] -- CMD…",
		summary: "run an agent command in this terminal and report its start and end",
		help: `
Runs CMD in this terminal, its input and output the terminal's, and exits with its exit code
(128 plus the signal's number when a signal killed it). krad-ade hears that it started
(working) and how it ended (done, or failed with its exit code), through the KRAD_ADE_*
variables as any krad command does. These reports mark a start and an end only: while CMD runs,
its own output or its own krad report calls say whether it works or waits.

A report never holds CMD up: one that fails, outside the app for one, is a single warning on
stderr, and none waits more than 2 seconds. A CMD that does not exist exits with 127.

CMD shares the terminal's process group, so Ctrl-C and window size changes reach it directly;
SIGTERM and SIGHUP sent to krad-ade-agents are passed on to it.`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&title, "title", "", "also set the terminal's title to `T`")
		},
		run: func(x *invocation, args []string) error {
			if len(args) == 0 {
				return x.usageError("%s needs a command after --, like: %s -- claude", x.path, x.path)
			}
			setTitle(x.stdout, title)
			return x.runReported(args)
		},
	}
}

// runReported runs argv as a child in this terminal, reports its start and end, and returns its
// exit code as an *exited.
func (x *invocation) runReported(argv []string) error {
	if _, ok := x.stderr.(*os.File); !ok {
		// The child's stderr is copied into x.stderr while a report may warn there.
		x.stderr = &lockedWriter{w: x.stderr}
	}
	r := x.reporter()
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return r.notStarted(argv[0], err, true)
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
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

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
func (r *reporter) report(state string, exitCode *int) {
	if r.b == nil {
		return
	}
	// Not r.x.ctx: an interrupt that cancels it reached the command too, and its end is still
	// worth reporting.
	ctx := context.WithoutCancel(r.x.ctx)
	body := &api.ReportBody{State: state, Lifecycle: true, ExitCode: exitCode}
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

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
