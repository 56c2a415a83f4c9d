package app

import (
	"strings"
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

// FuzzParseWindowLine: whatever a line of list-windows holds (a host's tmux writes it), what the
// app keeps of it is in range: ids, an exit code a process can have, and a @krad whose number,
// lead, role, session, group and spec are ones the app writes, with a title that is one line of
// text, so that an agent made of it stays small.
func FuzzParseWindowLine(f *testing.F) {
	f.Add(`@1 %1 0   0 {"terminal":1,"title":"lead","role":"lead","session":"build:1","spec":"0123456789abcdef"}`)
	f.Add(`@3 %7 1 3  0 {"terminal":2,"title":"w","role":"worker","session":"build:1","lead":1,"runs":true}`)
	f.Add(`@3 %7 1  9 0 {"terminal":9223372036854775807,"title":"x","role":"lead"}`)
	f.Add(`@3 %7 1 99999999999999999999  0 {"terminal":3,"title":"\u0001\u0002","role":"root","session":"main:1"}`)
	f.Add(`@0 %0 0   1 `)
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		w, err := parseWindowLine(line, "build")
		if err != nil {
			return
		}
		if w.window < 0 || w.pane < 0 {
			t.Fatalf("negative ids from %q", line)
		}
		if w.known && (w.status < -1 || w.status > 255) || !w.known && w.status != -1 {
			t.Fatalf("exit code %d (known %v) from %q", w.status, w.known, line)
		}
		m := w.meta
		if m == nil {
			return
		}
		if m.Terminal < 1 || m.Terminal > MaxTerminalNumber || m.Lead < 0 || m.Lead > MaxTerminalNumber {
			t.Fatalf("terminal %d, lead %d from %q", m.Terminal, m.Lead, line)
		}
		if m.Role != api.RoleShell && m.Role != api.RoleLead && m.Role != api.RoleWorker {
			t.Fatalf("role %q from %q", m.Role, line)
		}
		if m.Session != "" {
			if id, err := api.ParseTerminalID(m.Session); err != nil || id.Environment != "build" {
				t.Fatalf("session %q from %q", m.Session, line)
			}
		}
		if api.CheckTitle(m.Title) != nil || m.Title == "" || checkText(m.Group, maxGroup) != nil || m.Spec != "" && !isSpecKey(m.Spec) {
			t.Fatalf("title %q, group %q, spec %q from %q", m.Title, m.Group, m.Spec, line)
		}
	})
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
