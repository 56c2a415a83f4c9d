package app

import (
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
)

func TestTerminalStates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const quiet = 2 * time.Second
	report := func(state string, lifecycle bool) *api.ReportBody {
		return &api.ReportBody{State: state, Lifecycle: lifecycle}
	}

	t.Run("printing is working, a quiet spell is idle", func(t *testing.T) {
		tm := &terminal{state: api.StateStarting, since: t0}
		tm.output(at(10))
		if tm.state != api.StateWorking {
			t.Fatalf("after output: %s", tm.state)
		}
		if changed, again := tm.quiet(at(1000), quiet); changed || again != 1010*time.Millisecond {
			t.Fatalf("1 s after output: changed=%v again=%v", changed, again)
		}
		if changed, _ := tm.quiet(at(2010), quiet); !changed || tm.state != api.StateIdle {
			t.Fatalf("2 s after output: %s", tm.state)
		}
	})
	t.Run("a report is believed over output", func(t *testing.T) {
		tm := &terminal{state: api.StateWorking, since: t0}
		tm.report(report(api.StateIdle, false), at(0))
		tm.output(at(10)) // a TUI redrawing its clock
		if tm.state != api.StateIdle {
			t.Fatalf("output moved a reporting agent to %s", tm.state)
		}
		if changed, _ := tm.quiet(at(60000), quiet); changed {
			t.Fatal("the quiet spell moved a reporting agent")
		}
	})
	t.Run("run's start does not undo the agent's own first report", func(t *testing.T) {
		tm := &terminal{state: api.StateStarting, since: t0, runs: true}
		tm.report(report(api.StateWorking, false), at(1)) // the agent's hook, first
		tm.report(report(api.StateWorking, true), at(2))  // run's start, second
		if !tm.reported {
			t.Fatal("run's start made the agent's reports count for nothing")
		}
		if changed, _ := tm.quiet(at(60000), quiet); changed {
			t.Fatal("a reporting agent went idle on a quiet spell")
		}
	})
	t.Run("run's end ends a terminal whose process is run", func(t *testing.T) {
		tm := &terminal{state: api.StateWorking, since: t0, runs: true}
		code := 3
		tm.report(&api.ReportBody{State: api.StateFailed, Lifecycle: true, ExitCode: &code}, at(5))
		if !tm.dead || tm.state != api.StateFailed || *tm.exitCode != 3 {
			t.Fatalf("got dead=%v %s %v", tm.dead, tm.state, tm.exitCode)
		}
		if tm.report(report(api.StateWorking, false), at(6)) {
			t.Fatal("a dead terminal took a report")
		}
	})
	t.Run("run's end in a shell that lives on", func(t *testing.T) {
		tm := &terminal{state: api.StateWorking, since: t0}
		tm.report(report(api.StateDone, true), at(5))
		tm.output(at(6)) // the shell's prompt
		if tm.dead || tm.state != api.StateDone {
			t.Fatalf("got dead=%v %s", tm.dead, tm.state)
		}
		tm.report(report(api.StateWorking, true), at(7)) // the next command
		if tm.state != api.StateWorking || tm.reported {
			t.Fatalf("a new run: %s reported=%v", tm.state, tm.reported)
		}
	})
	t.Run("a Send is not settled until the agent reacts", func(t *testing.T) {
		const reaction = 10 * time.Second
		tm := &terminal{state: api.StateIdle, since: t0, sending: true}
		if tm.settled(at(0), reaction) {
			t.Fatal("settled while the Send types")
		}
		tm.sending, tm.sentAt = false, at(100)
		tm.output(at(150)) // the echo of what was typed
		if tm.settled(at(160), reaction) || tm.sentAt.IsZero() {
			t.Fatal("the echo counted as a reaction")
		}
		tm.quiet(at(2200), quiet)
		if tm.settled(at(2200), reaction) {
			t.Fatal("idle before any reaction counted as settled")
		}
		tm.output(at(2300)) // the agent answers
		if !tm.sentAt.IsZero() {
			t.Fatal("the answer did not count as a reaction")
		}
		tm.quiet(at(4400), quiet)
		if !tm.settled(at(4400), reaction) {
			t.Fatalf("idle after the reaction is not settled: %s", tm.state)
		}
	})
	t.Run("no reaction within the window is settled", func(t *testing.T) {
		tm := &terminal{state: api.StateIdle, since: t0, sentAt: at(0)}
		if tm.settled(at(9999), 10*time.Second) || !tm.settled(at(10000), 10*time.Second) {
			t.Fatal("the reaction window is not 10 s")
		}
	})
	t.Run("unreachable while the environment is down", func(t *testing.T) {
		tm := &terminal{state: api.StateStarting, since: t0}
		tm.output(at(10))
		if !tm.lost(at(100)) {
			t.Fatal("losing a working agent changed nothing shown")
		}
		if a := tm.agent(); a.State != api.StateUnreachable || !a.Since.Equal(at(100)) {
			t.Fatalf("while down: %s since %v, want unreachable since the loss", a.State, a.Since)
		}
		if changed, _ := tm.quiet(at(60000), quiet); changed || tm.state != api.StateWorking {
			t.Fatalf("the silence of a lost agent made it %s", tm.state)
		}
		if tm.settled(at(60000), time.Second) {
			t.Fatal("an unreachable agent is settled")
		}
		if !tm.found(at(60000)) {
			t.Fatal("finding it again changed nothing shown")
		}
		if a := tm.agent(); a.State != api.StateWorking || !a.Since.Equal(at(10)) {
			t.Fatalf("back: %s since %v, want working since its output", a.State, a.Since)
		}
		if changed, again := tm.quiet(at(61000), quiet); changed || again != time.Second {
			t.Fatalf("back: the quiet spell starts again from its return: changed=%v again=%v", changed, again)
		}
		// An agent that had ended stays ended: that is known.
		tm = &terminal{state: api.StateWorking, since: t0}
		tm.exited(0, at(1))
		if tm.lost(at(2)) || tm.agent().State != api.StateDone || !tm.settled(at(2), time.Hour) {
			t.Fatalf("an ended agent, lost: %s", tm.agent().State)
		}
	})
	t.Run("exit", func(t *testing.T) {
		tm := &terminal{state: api.StateWorking, since: t0}
		tm.exited(0, at(1))
		if tm.state != api.StateDone || *tm.exitCode != 0 || !tm.settled(at(1), time.Hour) {
			t.Fatalf("exit 0: %s", tm.state)
		}
		tm = &terminal{state: api.StateWorking, since: t0}
		tm.exited(137, at(1))
		if tm.state != api.StateFailed || *tm.exitCode != 137 {
			t.Fatalf("exit 137: %s", tm.state)
		}
		tm.closed(at(2))
		if tm.state != api.StateClosed || tm.exited(0, at(3)) {
			t.Fatal("a closed terminal changed on exit")
		}
	})
}

func TestDeadStatus(t *testing.T) {
	for _, tt := range []struct {
		status, signal string
		want           int
		known          bool
	}{{"0", "", 0, true}, {"3", "", 3, true}, {"", "9", 137, true}, {"", "", -1, false}} {
		if got, known := deadStatus(tt.status, tt.signal); got != tt.want || known != tt.known {
			t.Errorf("deadStatus(%q, %q) = %d, %v; want %d, %v", tt.status, tt.signal, got, known, tt.want, tt.known)
		}
	}
}

func FuzzParseWindowLine(f *testing.F) {
	f.Add("@1 %1 0   lead\t{\"terminal\":1,\"title\":\"lead\",\"role\":\"lead\"}")
	f.Add("@3 %7 1 3  w\t")
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		w, err := parseWindowLine(line)
		if err != nil {
			return
		}
		if w.window < 0 || w.pane < 0 {
			t.Fatalf("negative ids from %q", line)
		}
	})
}
