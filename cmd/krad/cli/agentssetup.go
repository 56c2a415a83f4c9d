package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/worktree"
)

// setUp runs, or waits for, the setup of the group this terminal works in (worktree.RunSetup),
// for krad-ade-agents run --setup, telling the app how it goes (Report with Setup): running,
// done, or failed, which is the terminal's end (an *exited with the setup's exit code). SIGTERM,
// SIGHUP or SIGINT stop the setup (its whole process group): it stays pending for the group's
// next terminal, and run ends as a signal would end it.
func (x *invocation) setUp(r *reporter) error {
	group := x.env(api.VarGroup)
	dir, err := os.Getwd()
	if group == "" || err != nil {
		return x.setupFailed(r, 1, fmt.Sprintf("this terminal works in no group (%s is not set), so it has no setup to run", api.VarGroup), "")
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(x.ctx)
	defer cancel()
	stopped := make(chan syscall.Signal, 1)
	go func() {
		select {
		case sig := <-sigs:
			if s, ok := sig.(syscall.Signal); ok {
				stopped <- s
			}
			cancel()
		case <-ctx.Done():
		}
	}()
	began := time.Now()
	s, err := worktree.RunSetup(ctx, worktree.SetupRun{Dir: dir, Group: group, Terminal: x.env(varTerminal), Env: os.Environ(), Out: x.stdout,
		Running: func(s worktree.Setup) {
			fmt.Fprintf(x.stderr, "%s: setting group %s up: %s (at most %v)\n", x.prog, group, termsafe.Escape(s.Command, 500), time.Duration(s.TimeoutSecs)*time.Second)
			r.send(&api.ReportBody{State: api.StateWorking, Lifecycle: true, Setup: api.SetupRunning})
		},
		Waiting: func(s worktree.Setup) {
			fmt.Fprintf(x.stderr, "%s: group %s is being set up by terminal %s; waiting for it\n", x.prog, group, termsafe.Escape(s.Terminal, 100))
			r.send(&api.ReportBody{State: api.StateWorking, Lifecycle: true, Setup: api.SetupRunning, Message: "run by " + termsafe.Escape(s.Terminal, 100)})
		}})
	cancel()
	switch {
	case err != nil:
		return x.setupFailed(r, 1, fmt.Sprintf("group %s's setup could not run: %v", group, err), "")
	case s == nil || s.State == worktree.SetupDone:
		if s != nil {
			fmt.Fprintf(x.stderr, "%s: group %s is set up (%v)\n", x.prog, group, time.Since(began).Round(time.Second))
			clearScreen(x.stdout)
		}
		r.send(&api.ReportBody{State: api.StateWorking, Lifecycle: true, Setup: api.SetupDone})
		return nil
	case s.State == worktree.SetupPending: // stopped by a signal: the next terminal runs it again
		code := 128 + int(syscall.SIGTERM)
		select {
		case sig := <-stopped:
			code = 128 + int(sig)
		default:
		}
		return x.setupFailed(r, code, fmt.Sprintf("group %s's setup was stopped; the group's next terminal runs it again", group), "")
	}
	code := 1
	if s.ExitCode != nil && *s.ExitCode > 0 {
		code = *s.ExitCode
	}
	tail := s.Output
	if len(tail) > api.MaxReportMessage/2 {
		tail = tail[len(tail)-api.MaxReportMessage/2:]
	}
	return x.setupFailed(r, code, fmt.Sprintf("group %s's setup failed (%s): the command does not run; the group is kept for you to look at here, then krad retire %s",
		group, s.Why, group), s.Why+"\n"+strings.ToValidUTF8(tail, "\uFFFD"))
}

// setupFailed reports a setup that failed, as the terminal's end with code, says why on stderr,
// and returns the *exited.
func (x *invocation) setupFailed(r *reporter, code int, why, message string) error {
	if message == "" {
		message = why
	}
	if len(message) > api.MaxReportMessage {
		message = message[:api.MaxReportMessage]
	}
	// Said before the report: whoever the report wakes finds it on the screen.
	_, _ = io.WriteString(x.stderr, errorLines(x.prog, errors.New(why)))
	r.send(&api.ReportBody{State: api.StateFailed, Lifecycle: true, Setup: api.SetupFailed, ExitCode: &code, Message: strings.ToValidUTF8(message, "")})
	return &exited{code: code}
}

// clearScreen clears w's screen when w is a terminal (its lines go to the scrollback): once a
// group is set up, its command starts on a clean screen, which is how the app tells that it has
// drawn itself before typing a prompt into it.
func clearScreen(w io.Writer) {
	f, ok := w.(*os.File)
	if !ok {
		return
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		return
	}
	_, _ = io.WriteString(f, "\x1b[H\x1b[2J")
}
