package ui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/config"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func agent(env string, n int, role api.Role, state api.State, title string) api.Agent {
	return api.Agent{Environment: env, Terminal: n, Role: role, State: state, Title: title, Since: t0}
}

// model is a UI at 80×24 that got a snapshot of main up with a lead and two workers.
func model(t *testing.T, agents ...api.Agent) Model {
	t.Helper()
	m := New(context.Background(), Options{Environments: []Environment{{Name: "main"}, {Name: "build", SSH: "buildbox"}}})
	m.now = t0.Add(90 * time.Second)
	if agents == nil {
		agents = []api.Agent{
			agent("main", 1, api.RoleLead, api.StateWorking, "lead"),
			agent("main", 2, api.RoleWorker, api.StateWorking, "tests"),
			agent("main", 3, api.RoleWorker, api.StateIdle, "docs"),
		}
	}
	m = update(t, m, snapshotMsg{snap: app.Snapshot{Agents: agents, Environments: []app.EnvironmentStatus{{Name: "main", Up: true}, {Name: "build", SSH: "buildbox"}}}})
	return m
}

func update(t *testing.T, m Model, msgs ...tea.Msg) Model {
	t.Helper()
	for _, msg := range msgs {
		next, _ := m.Update(msg)
		m = next.(Model)
	}
	return m
}

func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

func typed(s string) []tea.Msg {
	var out []tea.Msg
	for _, r := range s {
		out = append(out, key(string(r)))
	}
	return out
}

func changed(a api.Agent) app.Event {
	return app.Event{Agent: &api.AgentEvent{Kind: api.AgentChanged, Agent: a}}
}

// screen is what a person reads: the rendered text without its styles.
func screen(m Model) string { return ansi.Strip(m.Render()) }

// prose is the screen's words with the lines joined, for text that wraps.
func prose(m Model) string { return strings.Join(strings.Fields(screen(m)), " ") }

func row(t *testing.T, m Model, id string) string {
	t.Helper()
	for _, l := range strings.Split(screen(m), "\n") {
		if strings.HasPrefix(l[min(2, len(l)):], id+" ") {
			return l
		}
	}
	t.Fatalf("no row for %s on the screen:\n%s", id, screen(m))
	return ""
}

func TestAgentsLive(t *testing.T) {
	m := model(t)
	if r := row(t, m, "main:2"); !strings.Contains(r, "worker") || !strings.Contains(r, "working") || !strings.Contains(r, "tests") || !strings.Contains(r, "1m") {
		t.Errorf("main:2's row: %q", r)
	}
	// A worker asks for input: its state stands out without colour, and it is marked until seen.
	w := agent("main", 2, api.RoleWorker, api.StateNeedsInput, "tests")
	m = update(t, m, eventsMsg{events: []app.Event{changed(w)}})
	if r := row(t, m, "main:2"); !strings.Contains(r, "needs_input!") || r[1] != '*' {
		t.Errorf("after needs_input, main:2's row: %q, want needs_input! and a * mark", r)
	}
	if !strings.Contains(screen(m), "1 need you") {
		t.Errorf("the title does not count it:\n%s", screen(m))
	}
	m = update(t, m, key("down")) // the cursor goes to main:2: seen
	if r := row(t, m, "main:2"); r[0] != '>' || r[1] == '*' {
		t.Errorf("after the cursor reached it, main:2's row: %q, want > and no mark", r)
	}
	// Idle after working marks; failed with its exit code; removed goes.
	code := 3
	f := agent("main", 3, api.RoleWorker, api.StateFailed, "docs")
	f.ExitCode = &code
	m = update(t, m, eventsMsg{events: []app.Event{
		changed(agent("main", 1, api.RoleLead, api.StateIdle, "lead")),
		changed(f),
		{Agent: &api.AgentEvent{Kind: api.AgentAdded, Agent: agent("build", 1, api.RoleShell, api.StateStarting, "sh")}},
	}})
	if r := row(t, m, "main:1"); r[1] != '*' || !strings.Contains(r, "idle") {
		t.Errorf("main:1 idle after working: %q", r)
	}
	if r := row(t, m, "main:3"); !strings.Contains(r, "failed!") || !strings.Contains(r, " 3 ") {
		t.Errorf("main:3 failed with 3: %q", r)
	}
	m = update(t, m, eventsMsg{events: []app.Event{{Agent: &api.AgentEvent{Kind: api.AgentRemoved, Agent: w}}}})
	for _, l := range strings.Split(screen(m), "\n") {
		if strings.HasPrefix(l[min(2, len(l)):], "main:2 ") {
			t.Errorf("main:2 was removed but shows:\n%s", screen(m))
		}
	}
	row(t, m, "build:1")
}

// The bell, once turned on, rings when an agent comes to need the person, and not otherwise.
func TestBell(t *testing.T) {
	rings := func(m Model, a api.Agent) (Model, bool) {
		next, cmd := m.Update(eventsMsg{events: []app.Event{changed(a)}})
		return next.(Model), cmd != nil && strings.Contains(fmt.Sprint(collect(cmd)), "\a")
	}
	m := model(t)
	m, rang := rings(m, agent("main", 2, api.RoleWorker, api.StateNeedsInput, "tests"))
	if rang {
		t.Error("the bell rang while off")
	}
	m = update(t, m, key("b"))
	if !strings.Contains(screen(m), "the bell for agents that need you is on") {
		t.Errorf("b:\n%s", screen(m))
	}
	if m, rang = rings(m, agent("main", 3, api.RoleWorker, api.StateFailed, "docs")); !rang {
		t.Error("the bell did not ring for a failure")
	}
	if _, rang = rings(m, agent("main", 1, api.RoleLead, api.StateWorking, "lead")); rang {
		t.Error("the bell rang for working")
	}
}

// collect runs cmd and the batches it makes, except those that wait (subscriptions, feeds).
func collect(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		if b, ok := msg.(tea.BatchMsg); ok {
			var out []tea.Msg
			for _, c := range b {
				out = append(out, collect(c)...)
			}
			return out
		}
		return []tea.Msg{msg}
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}

func TestTitlesAreEscaped(t *testing.T) {
	m := model(t, agent("main", 1, api.RoleShell, api.StateIdle, "evil\x1b]0;pwned\x07\x1b[2J"))
	out := m.Render()
	if strings.Contains(out, "\x07") || strings.Contains(out, "\x1b]0;") || strings.Contains(out, "\x1b[2J") {
		t.Fatalf("a title's control characters reached the screen: %q", out)
	}
	if !strings.Contains(screen(m), `evil\x1b]0;pwned\a`) {
		t.Errorf("the title is not shown escaped:\n%s", screen(m))
	}
}

func TestFilter(t *testing.T) {
	m := model(t)
	m = update(t, m, append([]tea.Msg{key("/")}, typed("doc")...)...)
	s := screen(m)
	if !strings.Contains(s, "main:3") || strings.Contains(s, "main:2 ") || !strings.Contains(s, `filter "doc": 1 shown`) {
		t.Errorf("filtered by doc:\n%s", s)
	}
	m = update(t, m, key("enter")) // kept
	if !strings.Contains(screen(m), `filter "doc"`) {
		t.Error("Enter dropped the filter")
	}
	m = update(t, m, key("esc"))
	if s := screen(m); !strings.Contains(s, "main:2") || strings.Contains(s, `filter "`) {
		t.Errorf("after Esc:\n%s", s)
	}
}

func TestSizes(t *testing.T) {
	var agents []api.Agent
	for i := 1; i <= 1000; i++ {
		agents = append(agents, agent(fmt.Sprintf("env%02d", i%20), i, api.RoleWorker, api.StateWorking, strings.Repeat("long title ", 20)))
	}
	for _, size := range [][2]int{{80, 24}, {200, 60}, {40, 10}} {
		m := update(t, model(t, agents...), tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		lines := strings.Split(screen(m), "\n")
		if len(lines) != size[1] {
			t.Errorf("%v: %d lines", size, len(lines))
		}
		for _, l := range lines {
			if w := ansi.StringWidth(l); w > size[0] {
				t.Errorf("%v: a line of %d cells: %q", size, w, l)
			}
		}
		// The list scrolls: the last agent can be reached and is on screen.
		m = update(t, m, key("G"))
		a, _ := m.selected()
		if !strings.Contains(screen(m), a.ID().String()+" ") {
			t.Errorf("%v: the cursor's agent %s is not on the screen", size, a.ID())
		}
	}
	m := update(t, model(t), tea.WindowSizeMsg{Width: 20, Height: 5})
	s := screen(m)
	if !strings.Contains(s, "too small") || !strings.Contains(s, "40×10") || strings.Count(s, "\n") > 4 {
		t.Errorf("20×5: %q", s)
	}
	for _, l := range strings.Split(s, "\n") {
		if ansi.StringWidth(l) > 20 {
			t.Errorf("20×5: a line of %d cells: %q", ansi.StringWidth(l), l)
		}
	}
}

func TestEnvironments(t *testing.T) {
	m := model(t)
	m = update(t, m, eventsMsg{events: []app.Event{
		{App: &api.AppEvent{Kind: api.EnvironmentState, Environment: "build", Message: "failed: host key of buildbox is unknown: it offers …"}},
		{App: &api.AppEvent{Kind: api.EnvironmentDown, Environment: "main", Message: "tmux went away: exit status 1"}},
	}})
	s := screen(m)
	for _, want := range []string{
		"ssh buildbox", "failed: host key of buildbox is unknown", "hint: check the fingerprint",
		"this computer", "down: tmux went away",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the environments lack %q:\n%s", want, s)
		}
	}
	m = update(t, m, eventsMsg{events: []app.Event{{App: &api.AppEvent{Kind: api.EnvironmentState, Environment: "build", Message: "failed: authentication of u@buildbox failed: no key to offer"}}}})
	if s := screen(m); !strings.Contains(s, "hint: add your key to your ssh agent (ssh-add)") {
		t.Errorf("no key:\n%s", s)
	}
	m = update(t, m, eventsMsg{events: []app.Event{{App: &api.AppEvent{Kind: api.EnvironmentUp, Environment: "main"}}}})
	if s := screen(m); !strings.Contains(s, "this computer          up") {
		t.Errorf("main back up:\n%s", s)
	}
}

// Environments added to and removed from config.toml while the UI runs: an added SSH
// environment's row says its host (from the event), and a lead may be named there; a removed
// one's row goes, and its name is no longer taken; a fresh snapshot (after the UI fell behind)
// is the whole truth.
func TestEnvironmentsAddedAndRemoved(t *testing.T) {
	m := model(t)
	m = update(t, m, eventsMsg{events: []app.Event{{
		App:         &api.AppEvent{Kind: api.EnvironmentAdded, Environment: "lab"},
		Environment: &app.EnvironmentStatus{Name: "lab", SSH: "labhost"},
	}, {
		App: &api.AppEvent{Kind: api.EnvironmentState, Environment: "lab", Message: "connecting"},
	}}})
	envRow := func(m Model, name string) string {
		for _, l := range strings.Split(screen(m), "\n") {
			if strings.HasPrefix(l, name+" ") {
				return l
			}
		}
		return ""
	}
	if r := envRow(m, "lab"); !strings.Contains(r, "ssh labhost") || !strings.Contains(r, "connecting") || strings.Contains(r, "this computer") {
		t.Errorf("the added environment's row: %q\n%s", r, screen(m))
	}
	if err := m.checkLead(app.TerminalSpec{Environment: "lab"}); err != "" {
		t.Errorf("a lead on the added environment: %s", err)
	}

	m = update(t, m, eventsMsg{events: []app.Event{{App: &api.AppEvent{Kind: api.EnvironmentRemoved, Environment: "build", Message: "its terminals run on"}}}})
	if r := envRow(m, "build"); r != "" {
		t.Errorf("the removed environment still has a row: %q", r)
	}
	if !strings.Contains(screen(m), "environment build removed") {
		t.Errorf("the status does not say it:\n%s", screen(m))
	}
	// Its connection's last words, after the removal, bring no row back.
	m = update(t, m, eventsMsg{events: []app.Event{{App: &api.AppEvent{Kind: api.EnvironmentState, Environment: "build", Message: "stopped"}}}})
	if r := envRow(m, "build"); r != "" {
		t.Errorf("a late event of the removed environment made a row: %q", r)
	}
	// n no longer takes its name.
	msgs := []tea.Msg{key("n"), key("tab"), key("tab")}
	for range 4 {
		msgs = append(msgs, tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	msgs = append(msgs, typed("build")...)
	m = update(t, m, append(msgs, key("enter"), key("enter"), key("enter"))...)
	if s := screen(m); !strings.Contains(s, `error: no environment "build": the environments are main, lab`) {
		t.Errorf("a lead on the removed environment:\n%s", s)
	}
	m = update(t, m, key("esc"))

	// A fresh snapshot drops what it does not name and sets the hosts.
	m = update(t, m, snapshotMsg{snap: app.Snapshot{Environments: []app.EnvironmentStatus{{Name: "main", Up: true}, {Name: "ci", SSH: "cihost", Up: true}}}})
	if envRow(m, "lab") != "" || !strings.Contains(envRow(m, "ci"), "ssh cihost") {
		t.Errorf("after a fresh snapshot:\n%s", screen(m))
	}
}

func TestCloseAsksFirst(t *testing.T) {
	m := model(t)
	m = update(t, m, key("down"), key("x"))
	if s := prose(m); !strings.Contains(s, `Close main:2 (worker "tests")? Its window and its process end.`) || !strings.Contains(s, "y closes") {
		t.Fatalf("x on main:2:\n%s", s)
	}
	m = update(t, m, key("n"))
	if m.mode != modeList || !strings.Contains(screen(m), "nothing closed") {
		t.Errorf("n kept it:\n%s", screen(m))
	}
	m = update(t, m, key("x"))
	next, cmd := m.Update(key("y"))
	if m = next.(Model); cmd == nil || !strings.Contains(screen(m), "closing main:2") {
		t.Errorf("y: no call made:\n%s", screen(m))
	}
}

func TestCloseSessionAsksFirst(t *testing.T) {
	m := model(t,
		api.Agent{Environment: "main", Terminal: 1, Role: api.RoleLead, State: api.StateIdle, Title: "lead", Session: "main:1"},
		api.Agent{Environment: "main", Terminal: 2, Role: api.RoleWorker, State: api.StateIdle, Title: "a", Session: "main:1"},
		api.Agent{Environment: "main", Terminal: 3, Role: api.RoleWorker, State: api.StateIdle, Title: "b", Session: "main:1"},
	)
	m = update(t, m, key("x"))
	if s := prose(m); !strings.Contains(s, "Its 2 workers keep running (X closes them)") {
		t.Errorf("x on a lead:\n%s", s)
	}
	m = update(t, m, key("n"), key("X"))
	if s := prose(m); !strings.Contains(s, `Close the session of main:1 ("lead")? Its 2 workers end; the lead stays.`) {
		t.Errorf("X on a lead:\n%s", s)
	}
	next, cmd := m.Update(key("y"))
	if m = next.(Model); cmd == nil || !strings.Contains(screen(m), "closing the workers of main:1") {
		t.Errorf("y: no call made:\n%s", screen(m))
	}
	m = update(t, m, key("j"), key("X"))
	if s := screen(m); m.mode != modeList || !strings.Contains(s, "X closes a lead's session: main:2 is no lead") {
		t.Errorf("X on a worker:\n%s", s)
	}
}

func TestNewLeadForm(t *testing.T) {
	m := model(t)
	m = update(t, m, key("n"))
	if s := screen(m); !strings.Contains(s, "New lead") || !strings.Contains(s, "environment: main") {
		t.Fatalf("n:\n%s", s)
	}
	msgs := typed("review")
	msgs = append(msgs, key("tab"))
	msgs = append(msgs, typed("claude")...)
	msgs = append(msgs, key("tab"))
	for range 4 {
		msgs = append(msgs, tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	msgs = append(msgs, typed("nope")...)
	msgs = append(msgs, key("enter"), key("enter"), key("enter"))
	m = update(t, m, msgs...)
	if s := screen(m); !strings.Contains(s, `error: no environment "nope": the environments are main, build`) {
		t.Errorf("an unknown environment:\n%s", s)
	}
	m = update(t, m, key("esc"))
	if m.mode != modeList {
		t.Error("Esc did not leave the form")
	}
	// A command and an agent: one or the other.
	m = update(t, m, key("n"))
	msgs = typed("review")
	msgs = append(msgs, key("tab"))
	msgs = append(msgs, typed("claude")...)
	msgs = append(msgs, key("tab"), key("tab"), key("tab"))
	msgs = append(msgs, typed("claude")...)
	msgs = append(msgs, key("enter"))
	m = update(t, m, msgs...)
	if s := screen(m); !strings.Contains(s, `error: a lead runs a command or an agent, not both`) {
		t.Errorf("a command and an agent:\n%s", s)
	}
}

func TestHelpAndSettings(t *testing.T) {
	m := model(t)
	m = update(t, m, key("?"))
	if s := screen(m); !strings.Contains(s, "q  quit: the terminals keep running") {
		t.Errorf("help:\n%s", s)
	}
	m = update(t, m, key("j"), key("s"))
	if s := screen(m); !strings.Contains(s, "Let other programs find the agents API") {
		t.Errorf("settings:\n%s", s)
	}
	m = update(t, m, key("esc"))
	if m.mode != modeList {
		t.Error("Esc did not leave the settings")
	}
}

func TestLogPane(t *testing.T) {
	l := NewLogLines()
	m := New(context.Background(), Options{Log: l})
	fmt.Fprintf(l, "first\nsecond \x1b[2Jpart")
	fmt.Fprintf(l, "ial\n")
	m = update(t, m, logMsg{})
	s := screen(m)
	if !strings.Contains(s, "second \\x1b[2Jpartial") || strings.Contains(m.Render(), "\x1b[2J") {
		t.Errorf("log pane:\n%s", s)
	}
}

// A toggle whose write fails says why in full in the settings pane (the status line would cut a
// long error), and the setting shown stays; the next write that succeeds clears it.
func TestDiscoveryWriteFails(t *testing.T) {
	fail := errors.New("discovery not changed: write /home/u/.config/krad-ade/config.toml: rename /home/u/.config/krad-ade/.config.toml.123.tmp /home/u/.config/krad-ade/config.toml: operation not permitted")
	var wrote []bool
	m := New(context.Background(), Options{ConfigPath: "/home/u/.config/krad-ade/config.toml", Settings: NewSettings(config.Config{Discovery: true}),
		SetDiscovery: func(on bool) error { wrote = append(wrote, on); return fail }})
	m = update(t, m, key("s"))
	next, cmd := m.Update(key("d"))
	m = update(t, next.(Model), collect(cmd)...)
	if s := prose(m); !strings.Contains(s, "not written, nothing changed: "+fail.Error()) || !strings.Contains(s, "[x] Let other programs find the agents API") {
		t.Errorf("after a failed write:\n%s", screen(m))
	}
	if len(wrote) != 1 || wrote[0] {
		t.Errorf("SetDiscovery calls: %v, want one turning it off", wrote)
	}
	m.opts.SetDiscovery = func(bool) error { return nil }
	next, cmd = m.Update(key("d"))
	m = update(t, next.(Model), collect(cmd)...)
	if s := prose(m); strings.Contains(s, "not written") || !strings.Contains(s, "discovery off written to") {
		t.Errorf("after a write that succeeded:\n%s", screen(m))
	}
}

// attachApp gives an attach command; the model's other calls are not made here.
type attachApp struct{ App }

func (attachApp) AttachCommand(id api.TerminalID) (string, bool) {
	return "tmux -L krad-ade attach -t " + id.String(), true
}

// Enter steps aside for the attach command; until the person is back, no frame says they are
// (a frame drawn as tmux takes over shows that it attaches).
func TestAttachSaysSo(t *testing.T) {
	m := model(t)
	m.opts.App = attachApp{}
	m.status = "back from main:2"
	m = update(t, m, key("j"))
	next, cmd := m.Update(key("enter"))
	m = next.(Model)
	if s := screen(m); cmd == nil || !strings.Contains(s, "attaching to main:2…") || strings.Contains(s, "back from") {
		t.Errorf("Enter on main:2 (cmd %v):\n%s", cmd != nil, s)
	}
}

// TestGroupSetupShown: a worker that sets its group up shows it in its STATE, and one whose setup
// failed says so, the status line ending with the last line of the setup's output.
func TestGroupSetupShown(t *testing.T) {
	m := model(t)
	id := api.TerminalID{Environment: "main", Terminal: 2}
	setup := func(state, msg, output string) app.Event {
		return app.Event{App: &api.AppEvent{Kind: api.GroupSetup, Environment: "main", Message: msg},
			Setup: &app.SetupStatus{Terminal: id, Group: "fix", State: state, Output: output}}
	}
	m = update(t, m, eventsMsg{events: []app.Event{setup(api.SetupRunning, "group fix is setting up in main:2", "")}})
	if r := row(t, m, "main:2"); !strings.Contains(r, "setting up") {
		t.Errorf("main:2's row while it sets its group up: %q", r)
	}
	code := 3
	f := agent("main", 2, api.RoleWorker, api.StateFailed, "tests")
	f.ExitCode = &code
	m = update(t, m, eventsMsg{events: []app.Event{changed(f),
		setup(api.SetupFailed, "group fix's setup failed in main:2 (exited with 3)", "exited with 3\nnpm ERR! missing: left-pad\n")}})
	if r := row(t, m, "main:2"); !strings.Contains(r, "setup failed") {
		t.Errorf("main:2's row after its setup failed: %q", r)
	}
	if !strings.Contains(prose(m), "main:2: group fix's setup failed: npm ERR! missing: left-pad") {
		t.Errorf("the status line does not show the output's end:\n%s", screen(m))
	}
	m = update(t, m, eventsMsg{events: []app.Event{setup(api.SetupDone, "group fix is set up", "")}})
	if r := row(t, m, "main:2"); strings.Contains(r, "setup") {
		t.Errorf("main:2's row once set up: %q", r)
	}
}

// TestActionKeepsWhatAnEventSaid: what an event says while an action runs (a group held as its
// last terminal closes) stays on the status line beside the action's result, whichever comes
// first; with nothing said meanwhile, the result replaces the action's "…".
func TestActionKeepsWhatAnEventSaid(t *testing.T) {
	held := app.Event{App: &api.AppEvent{Kind: api.GroupNotRetired, Environment: "main", Message: "group vendoring is held: its checkout stays"}}
	m := model(t)
	m.status = "closing main:2…"
	m = update(t, m, eventsMsg{events: []app.Event{held}}, doneMsg{text: "closed main:2", said: "closing main:2…"})
	if got := prose(m); !strings.Contains(got, "closed main:2 · main: group vendoring is held: its checkout stays") {
		t.Errorf("the event came first, then the close's answer:\n%s", screen(m))
	}
	m.status = "closing main:2…"
	m = update(t, m, doneMsg{text: "closed main:2", said: "closing main:2…"}, eventsMsg{events: []app.Event{held}})
	if got := prose(m); !strings.Contains(got, "main: group vendoring is held: its checkout stays") {
		t.Errorf("the close's answer came first, then the event:\n%s", screen(m))
	}
	m.status = "closing main:3…"
	m = update(t, m, doneMsg{text: "closed main:3", said: "closing main:3…"})
	if !slices.ContainsFunc(strings.Split(screen(m), "\n"), func(l string) bool { return strings.TrimSpace(l) == "closed main:3" }) {
		t.Errorf("nothing said meanwhile:\n%s", screen(m))
	}
}
