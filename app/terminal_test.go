package app

import (
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
)

func TestTerminalStates(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const quiet = 2 * time.Second
	report := func(state api.State, lifecycle bool) *api.ReportBody {
		return &api.ReportBody{State: state, Lifecycle: lifecycle}
	}

	t.Run("printing is working, a quiet spell is idle", func(t *testing.T) {
		tm := &terminal{state: api.StateStarting, since: t0}
		tm.output(at(10), quiet)
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
		tm.output(at(10), quiet) // a TUI redrawing its clock
		if tm.state != api.StateIdle {
			t.Fatalf("output moved a reporting agent to %s", tm.state)
		}
		if changed, _ := tm.quiet(at(60000), quiet); changed {
			t.Fatal("the quiet spell moved a reporting agent")
		}
	})
	t.Run("where a state came from, and what the agent said with it", func(t *testing.T) {
		tm := &terminal{state: api.StateStarting, since: t0}
		tm.output(at(10), quiet)
		if a := tm.agent(); a.State != api.StateWorking || a.StateFrom != api.StateFromScreen || a.Message != "" {
			t.Fatalf("after output: %+v", a)
		}
		if !tm.report(&api.ReportBody{State: api.StateNeedsInput, Message: "Claude needs your\npermission to use Bash\x1b[2J"}, at(20)) {
			t.Fatal("the report changed nothing")
		}
		a := tm.agent()
		if a.State != api.StateNeedsInput || a.StateFrom != api.StateFromReported || a.Message != "Claude needs your permission to use Bash [2J" || !a.Since.Equal(at(20)) {
			t.Fatalf("after the agent's needs_input: %+v", a)
		}
		// Another message for the same state is news; its since stays.
		if !tm.report(&api.ReportBody{State: api.StateNeedsInput, Message: "Claude is waiting for your input"}, at(30)) || !tm.since.Equal(at(20)) {
			t.Fatalf("a new message: changed nothing, or moved since to %v", tm.since)
		}
		// A report without a message says nothing more.
		tm.report(&api.ReportBody{State: api.StateWorking}, at(40))
		if a := tm.agent(); a.Message != "" || a.StateFrom != api.StateFromReported {
			t.Fatalf("after working: %+v", a)
		}
		// The end of its process is the app's to tell, not the agent's.
		tm.exited(0, at(50))
		if a := tm.agent(); a.StateFrom != api.StateFromScreen || a.State != api.StateDone {
			t.Fatalf("after its end: %+v", a)
		}
	})
	t.Run("an agent at rest hands the terminal back", func(t *testing.T) {
		tm := &terminal{state: api.StateStarting, since: t0}
		tm.report(report(api.StateWorking, false), at(10)) // its hooks
		tm.report(&api.ReportBody{State: api.StateIdle, Lifecycle: true, Message: "turn ended"}, at(20))
		if a := tm.agent(); a.State != api.StateIdle || a.StateFrom != api.StateFromReported || a.Message != "turn ended" || tm.reported {
			t.Fatalf("after the agent's rest: %+v reported=%v", a, tm.reported)
		}
		// Within the quiet spell, its redraw at rest (Codex's prompt, the shell's after the
		// agent), which may come in after its word: idle still.
		if tm.output(at(25), quiet); tm.state != api.StateIdle {
			t.Fatalf("its redraw just after the rest made it %s", tm.state)
		}
		tm.output(at(20+2000), quiet) // its next turn, or the shell's prompt and a command the person typed
		if a := tm.agent(); a.State != api.StateWorking || a.StateFrom != api.StateFromScreen {
			t.Fatalf("output after the rest: %+v", a)
		}
		if changed, _ := tm.quiet(at(20+2000+2000), quiet); !changed || tm.state != api.StateIdle {
			t.Fatalf("the quiet spell after the rest: %s", tm.state)
		}
	})
	t.Run("after a rest, a Send's work is work at once", func(t *testing.T) {
		tm := &terminal{state: api.StateWorking, since: t0}
		tm.report(&api.ReportBody{State: api.StateIdle, Lifecycle: true}, at(10))
		s := tm.beginSend("next", []string{">"}, foreground{pgid: 5}, at(100))
		tm.typed(s, at(101))
		tm.send = nil // a look saw its reaction
		if tm.output(at(150), quiet); tm.state != api.StateWorking {
			t.Fatalf("output after a Send, within the spell after a rest: %s, want working", tm.state)
		}
	})
	t.Run("an agent's rest is its reaction to a Send", func(t *testing.T) {
		tm := &terminal{state: api.StateIdle, since: t0}
		s := tm.beginSend("do it", []string{"$"}, foreground{pgid: 5}, at(0))
		tm.typed(s, at(1))
		tm.report(&api.ReportBody{State: api.StateIdle, Lifecycle: true}, at(100))
		if tm.send != nil || !tm.settled(10*time.Second) {
			t.Fatal("a turn's end did not count as the reaction to the Send")
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
		tm.output(at(6), quiet) // the shell's prompt
		if tm.dead || tm.state != api.StateDone {
			t.Fatalf("got dead=%v %s", tm.dead, tm.state)
		}
		tm.report(report(api.StateWorking, true), at(7)) // the next command
		if tm.state != api.StateWorking || tm.reported {
			t.Fatalf("a new run: %s reported=%v", tm.state, tm.reported)
		}
	})
	t.Run("unreachable while the environment is down", func(t *testing.T) {
		tm := &terminal{state: api.StateStarting, since: t0}
		tm.output(at(10), quiet)
		if !tm.lost(at(100)) {
			t.Fatal("losing a working agent changed nothing shown")
		}
		if a := tm.agent(); a.State != api.StateUnreachable || !a.Since.Equal(at(100)) {
			t.Fatalf("while down: %s since %v, want unreachable since the loss", a.State, a.Since)
		}
		if changed, _ := tm.quiet(at(60000), quiet); changed || tm.state != api.StateWorking {
			t.Fatalf("the silence of a lost agent made it %s", tm.state)
		}
		tm.state = api.StateIdle // as the agent last was, for settled: unreachable is never settled
		if tm.settled(time.Second) {
			t.Fatal("an unreachable agent is settled")
		}
		tm.state = api.StateWorking
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
		if tm.lost(at(2)) || tm.agent().State != api.StateDone || !tm.settled(time.Hour) {
			t.Fatalf("an ended agent, lost: %s", tm.agent().State)
		}
	})
	t.Run("exit", func(t *testing.T) {
		tm := &terminal{state: api.StateWorking, since: t0}
		tm.exited(0, at(1))
		if tm.state != api.StateDone || *tm.exitCode != 0 || !tm.settled(time.Hour) {
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

// TestSendReaction: what a Wait after a Send makes of the looks at the terminal.
func TestSendReaction(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const reaction = 10 * time.Second
	shell := foreground{pgid: 100, name: "bash"}
	prompt := []string{"$", "", ""}
	// sent is an idle terminal that a Send typed "sleep 5" into, with Enter, by 100 ms.
	sent := func() (*terminal, *pendingSend) {
		tm := &terminal{state: api.StateIdle, since: t0}
		s := tm.beginSend("sleep 5", prompt, shell, at(0))
		tm.entering(s, []string{"$ sleep 5", "", ""})
		tm.typed(s, at(100))
		return tm, s
	}
	look := func(tm *terminal, s *pendingSend, ms int, job bool, rows ...string) {
		tm.looked(s, screen{rows: rows}, job, at(ms), reaction)
	}

	t.Run("not settled while the Send types", func(t *testing.T) {
		tm := &terminal{state: api.StateIdle, since: t0}
		tm.beginSend("x", prompt, shell, at(0))
		if tm.settled(reaction) {
			t.Fatal("settled while the Send types")
		}
		if _, ok := tm.lookIn(at(60000), reaction); ok {
			t.Fatal("a Wait looks while the Send types")
		}
	})
	t.Run("a Spawn's prompt still to be typed holds a Wait, even on an agent's own word", func(t *testing.T) {
		tm := &terminal{state: api.StateIdle, since: t0, prompt: make(chan struct{}, 1)}
		tm.report(&api.ReportBody{State: api.StateIdle}, at(100)) // its hook, as it starts
		if tm.settled(reaction) {
			t.Fatal("settled before its prompt was typed")
		}
		code := 3
		tm.report(&api.ReportBody{State: api.StateFailed, Lifecycle: true, ExitCode: &code}, at(200))
		if !tm.settled(reaction) {
			t.Fatal("an ended worker is not settled while its prompt waits")
		}
	})
	t.Run("the echo is no reaction; the answer is", func(t *testing.T) {
		tm, s := sent()
		look(tm, s, 110, false, "$ sleep 5", "", "")
		if tm.send == nil || tm.settled(reaction) {
			t.Fatal("the echo counted as a reaction")
		}
		look(tm, s, 120, false, "$ sleep 5", "", "$")
		if tm.send != nil || !tm.settled(reaction) {
			t.Fatal("the prompt after the command did not count as a reaction")
		}
	})
	t.Run("a job the text started holds the Wait past the window", func(t *testing.T) {
		tm, s := sent()
		look(tm, s, 150, true, "$ sleep 5", "", "")
		if d, ok := tm.lookIn(at(150), reaction); !ok || d != reaction-50*time.Millisecond {
			t.Fatalf("lookIn before the window ends: %v %v", d, ok)
		}
		look(tm, s, 10100, true, "$ sleep 5", "", "")
		look(tm, s, 10600, true, "$ sleep 5", "", "")
		if tm.settled(reaction) {
			t.Fatal("settled while the job runs")
		}
		if d, ok := tm.lookIn(at(10600), reaction); !ok || d != restConfirm {
			t.Fatalf("lookIn while the job runs: %v %v", d, ok)
		}
		// Between two commands of the line: no job for one look only.
		look(tm, s, 11100, false, "$ sleep 5", "", "")
		look(tm, s, 11300, true, "$ sleep 5", "", "")
		look(tm, s, 11800, false, "$ sleep 5", "", "")
		if tm.settled(reaction) {
			t.Fatal("settled on looks that saw no job for less than restConfirm")
		}
		look(tm, s, 12300, false, "$ sleep 5", "", "")
		if !tm.settled(reaction) {
			t.Fatal("not settled after the job ended, with nothing on the screen")
		}
	})
	t.Run("nothing shown and no job: given up after the window", func(t *testing.T) {
		tm, s := sent()
		look(tm, s, 5000, false, "$ sleep 5", "", "") // before the window ends: no rest yet
		if d, ok := tm.lookIn(at(5000), reaction); !ok || d != 5100*time.Millisecond {
			t.Fatalf("lookIn before the window ends: %v %v", d, ok)
		}
		if d, ok := tm.lookIn(at(10100), reaction); !ok || d != 0 {
			t.Fatalf("lookIn as the window ends: %v %v", d, ok)
		}
		look(tm, s, 10100, false, "$ sleep 5", "", "")
		if tm.settled(reaction) {
			t.Fatal("given up on one look")
		}
		look(tm, s, 10600, false, "$ sleep 5", "", "")
		if !tm.settled(reaction) {
			t.Fatal("not given up after the window and restConfirm")
		}
		if _, ok := tm.lookIn(at(10600), reaction); ok {
			t.Fatal("a Wait looks after the Send was given up on")
		}
	})
	t.Run("a look overtaken by a later one is not applied", func(t *testing.T) {
		tm, s := sent()
		look(tm, s, 10700, false, "$ sleep 5", "", "")
		look(tm, s, 10100, false, "$ sleep 5", "", "$ done") // began first, answered last
		if tm.send == nil {
			t.Fatal("an overtaken look was applied")
		}
		tm2, _ := sent()
		look(tm2, s, 200, false, "$ sleep 5", "", "$") // a look at another Send
		tm2.beginSend("again", prompt, shell, at(300))
		look(tm2, s, 400, false, "$ sleep 5", "", "$") // a look at the Send before
		if tm2.send == nil {
			t.Fatal("a look at another Send was applied")
		}
	})
	t.Run("a TUI's own echo, as its Enter is pressed, is no reaction", func(t *testing.T) {
		tm := &terminal{state: api.StateIdle, since: t0}
		s := tm.beginSend("/needle", []string{"hay 1", "hay 2", ":"}, shell, at(0))
		tm.entering(s, []string{"hay 1", "hay 2", "/needle"})
		tm.typed(s, at(100))
		look(tm, s, 110, false, "hay 1", "hay 2", "/needle")
		if tm.send == nil {
			t.Fatal("the TUI's echo counted as a reaction")
		}
		look(tm, s, 120, false, "needle 150", "hay 151", ":")
		if tm.send != nil {
			t.Fatal("the TUI's answer did not count as a reaction")
		}
	})
	t.Run("an agent that reports reacts by reporting", func(t *testing.T) {
		tm, s := sent()
		tm.reported = true
		look(tm, s, 200, false, "$ sleep 5", "thinking…", "")
		if tm.send == nil {
			t.Fatal("a reporting agent's screen counted as its reaction")
		}
		tm.report(&api.ReportBody{State: api.StateIdle}, at(300))
		if tm.send != nil || !tm.settled(reaction) {
			t.Fatal("the agent's report did not count as its reaction")
		}
	})
	t.Run("run's start is no reaction; an end is", func(t *testing.T) {
		tm, _ := sent()
		tm.report(&api.ReportBody{State: api.StateWorking, Lifecycle: true}, at(200))
		if tm.send == nil {
			t.Fatal("run's start counted as a reaction")
		}
		code := 0
		tm.report(&api.ReportBody{State: api.StateDone, Lifecycle: true, ExitCode: &code}, at(300))
		if tm.send != nil || !tm.settled(reaction) {
			t.Fatal("run's end did not settle the terminal")
		}
	})
}

func TestDeadStatus(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		status, signal string
		want           int
		known          bool
		bad            bool
	}{
		{"0", "", 0, true, false}, {"3", "", 3, true, false}, {"255", "", 255, true, false},
		{"", "9", 137, true, false}, {"", "127", 255, true, false}, {"", "", -1, false, false},
		// Out of what a process can end with: the pane is dead, how is not known.
		{"256", "", -1, true, true}, {"-1", "", -1, true, true}, {"x", "", -1, true, true},
		{"", "9223372036854775807", -1, true, true}, {"", "0", -1, true, true}, {"", "128", -1, true, true},
	} {
		got, known, err := deadStatus(tt.status, tt.signal)
		if got != tt.want || known != tt.known || (err != nil) != tt.bad {
			t.Errorf("deadStatus(%q, %q) = %d, %v, %v; want %d, %v, error %v", tt.status, tt.signal, got, known, err, tt.want, tt.known, tt.bad)
		}
	}
}

// FuzzNumbersReadBack: the numbers the app reads back from tmux (the session's next terminal, a
// window's index) are in range or refused, and a screen is clipped to its last MaxScreen bytes
// from the start of a line.
func FuzzNumbersReadBack(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "2147483647", "2147483648", "9223372036854775807", "99999999999999999999", "+5", " 5", "5x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := parseNext(s); err == nil && (n < 1 || n > MaxTerminalNumber+1) {
			t.Fatalf("parseNext(%q) = %d", s, n)
		}
		if n, err := parseIndex(s); err == nil && (n < 0 || n > MaxTerminalNumber) {
			t.Fatalf("parseIndex(%q) = %d", s, n)
		}
		screen := strings.Repeat(s+"\n", MaxScreen/max(1, len(s))+2)
		clipped := clipScreen(screen)
		if len(clipped) > MaxScreen || !strings.HasSuffix(screen, clipped) {
			t.Fatalf("clipScreen kept %d bytes that are not the screen's end", len(clipped))
		}
		if len(clipped) < len(screen) && clipped != "" && !strings.HasSuffix(screen[:len(screen)-len(clipped)], "\n") {
			t.Fatalf("clipScreen cut inside a line")
		}
	})
}

// TestEveryHandlerHasItsAnswer: each request of the dispatch table has an answer in api's table
// of kinds, so that Handle can name what it returns; the requests without a handler are those
// that no app serves yet, whose answer is not known either.
func TestEveryHandlerHasItsAnswer(t *testing.T) {
	t.Parallel()
	for _, n := range api.Names {
		_, served := handlers[n]
		switch {
		case n == api.Hello:
			if served {
				t.Errorf("Hello has a handler: the bus answers it itself")
			}
		case served && n.Answer() == "":
			t.Errorf("%s has a handler but no answer in api's kinds", n)
		case !served && n.Answer() != "":
			t.Errorf("%s has an answer (%s) in api's kinds but no handler", n, n.Answer())
		}
	}
}
