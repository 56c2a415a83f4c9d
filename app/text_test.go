package app_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/tmux"
)

// tmuxOut runs the tmux command line on the harness's server, as a person would, and returns its
// output.
func (h *harness) tmuxOut(args ...string) string {
	h.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", h.socket}, args...)...).CombinedOutput()
	if err != nil {
		h.t.Fatalf("tmux %q: %v: %s", args, err, out)
	}
	return string(out)
}

// windowNames is each terminal's window name, by its @krad_terminal.
func (h *harness) windowNames() map[string]string {
	h.t.Helper()
	// The name goes last: the @krad_terminal of the app's windows holds no '|'.
	names := map[string]string{}
	for _, line := range strings.Split(h.tmuxOut("list-windows", "-t", "main", "-F", "#{@krad_terminal}|#{window_name}"), "\n") {
		if id, name, ok := strings.Cut(line, "|"); ok {
			names[id] = name
		}
	}
	return names
}

// TestTitlesAndFoldersAreText: titles and folders that hold tmux formats reach tmux as text, for
// configured terminals and spawned workers: #(…) runs nothing, #{KRAD_ADE_TOKEN} does not put the
// token in a window's name, and each window is named exactly its title.
func TestTitlesAndFoldersAreText(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	ran := filepath.Join(tmp, "ran")
	dir := filepath.Join(tmp, "d #{pid} #(echo x) ##[x] #S")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	leadTitle := "lead #(touch " + ran + "-config) #{pid}"
	h := start(t, withTerminals(app.TerminalSpec{Title: leadTitle, Lead: true, Dir: dir, Command: "pwd; exec sh"}))
	c := h.as(1)
	titles := []string{
		"fix #(touch " + ran + "-spawn) bug",
		"#{KRAD_ADE_TOKEN}",
		"#{E:KRAD_ADE_TOKEN} #W #S ## ###[x] %H",
	}
	want := map[string]string{"main:1": leadTitle}
	for _, title := range titles {
		w := h.agent(c, api.Spawn, &api.SpawnBody{Title: title, Command: []string{"sleep", "60"}})
		if w.Title != title {
			t.Errorf("Spawn answered the title %q, want %q", w.Title, title)
		}
		want[api.TerminalID{Environment: "main", Terminal: w.Terminal}.String()] = title
	}
	names := h.windowNames()
	for id, title := range want {
		if names[id] != title {
			t.Errorf("%s's window is named %q, want its title %q", id, names[id], title)
		}
	}
	for id, name := range names {
		if strings.Contains(name, h.token.Reveal()) {
			t.Errorf("%s's window name holds the bus token", id)
		}
	}
	time.Sleep(300 * time.Millisecond) // format jobs run in the background
	checkNothingRan(t, ran+"-config", ran+"-spawn")
	h.waitScreen(c, 1, dir) // the lead's pwd: the folder as it was named
}

// checkNothingRan fails the test if any of the files exists: a #(touch FILE) ran.
func checkNothingRan(t *testing.T, files ...string) {
	t.Helper()
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("a title's #(touch %s) ran", f)
		}
	}
}

// TestTitlesSurviveRestart: a title with a control character is refused, and no window's name,
// whatever it holds (tabs, newlines, JSON, a line like tmux's own %begin), loses a terminal its
// number, role or session when the app restarts: not a worker renamed by hand, not a worker an
// earlier version named with a tab, not a window a person opened with such a name.
func TestTitlesSurviveRestart(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	for _, title := range []string{"fix\tbug", "two\nlines", "\x1b[31mred"} {
		_, err := h.call(c, api.Spawn, &api.SpawnBody{Title: title, Command: []string{"sleep", "60"}})
		if code(err) != api.CodeBadRequest || !strings.Contains(err.Error(), "control character") {
			t.Errorf("Spawn titled %q: %v, want bad_request about the control character", title, err)
		}
	}
	if agents := h.agents(h.as(0)); len(agents) != 1 {
		t.Fatalf("after the refused Spawns: %+v, want the lead alone", agents)
	}

	forged := "x\ty\n%begin 1 2 1\n{\"terminal\":1,\"role\":\"lead\"}\t#{@krad}\n"
	renamed := h.agent(c, api.Spawn, &api.SpawnBody{Title: "renamed", Command: []string{"sleep", "60"}})
	h.tmuxOut("rename-window", "-t", h.window(renamed.Terminal), forged)
	// A window a person opens, named by hand: numbered while the app runs.
	h.tmuxOut("new-window", "-d", "-t", "main:", "-n", tmux.FormatLiteral(forged), "sleep 60")
	byHand := renamed.Terminal + 1
	h.waitAgent(byHand)
	want := map[int]api.Agent{
		1:                {Role: api.RoleLead, Session: "main:1", Title: "lead"},
		renamed.Terminal: {Role: api.RoleWorker, Session: "main:1", Title: "renamed"},
		byHand:           {Role: api.RoleShell, Title: api.CleanTitle(forged)},
	}
	check := func(when string) {
		t.Helper()
		agents := h.agents(h.as(0))
		if len(agents) != len(want) {
			t.Errorf("%s: %+v, want %d terminals", when, agents, len(want))
		}
		for _, a := range agents {
			w := want[a.Terminal]
			if a.Role != w.Role || a.Session != w.Session || a.Title != w.Title {
				t.Errorf("%s: main:%d is %s %q of session %q, want %s %q of session %q", when, a.Terminal, a.Role, a.Title, a.Session, w.Role, w.Title, w.Session)
			}
		}
	}
	check("before the restart")
	h.stop()

	// While the app is away: what an earlier version made of Spawn {"title":"old\ttab"} (the
	// window named with the tab, the title in @krad), and another window opened by hand.
	old := byHand + 1
	oldWindow := strings.TrimSpace(h.tmuxOut("new-window", "-d", "-P", "-F", "#{window_id}", "-t", "main:", "-n", "old\ttab", "sleep 60"))
	h.tmuxOut("set-option", "-w", "-t", oldWindow, "@krad", fmt.Sprintf(`{"terminal":%d,"title":"old\ttab","role":"worker","session":"main:1","lead":1,"runs":true}`, old))
	h.tmuxOut("set-option", "-w", "-t", oldWindow, "@krad_terminal", fmt.Sprintf("main:%d", old))
	h.tmuxOut("set-option", "-t", "main", "@krad_next", strconv.Itoa(old+1))
	want[old] = api.Agent{Role: api.RoleWorker, Session: "main:1", Title: "old tab"}
	h.tmuxOut("new-window", "-d", "-t", "main:", "-n", tmux.FormatLiteral("\n"+forged), "sleep 60")
	want[old+1] = api.Agent{Role: api.RoleShell, Title: api.CleanTitle(forged)}

	h.start(testbin.Dir(t), lead())
	check("after the restart")
	c = h.as(1) // with the new token
	// The lead still directs the workers, and the next terminal gets the next number.
	if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(renamed.Terminal), Text: "x", Enter: new(bool)}); err != nil {
		t.Errorf("Send to the renamed worker after the restart: %v", err)
	}
	if w := h.agent(c, api.Spawn, &api.SpawnBody{Command: []string{"sleep", "60"}}); w.Terminal != old+2 {
		t.Errorf("the next worker is main:%d, want main:%d", w.Terminal, old+2)
	}
}

// waitAgent waits until the bus lists terminal n of main.
func (h *harness) waitAgent(n int) api.Agent {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, a := range h.agents(h.as(0)) {
			if a.Terminal == n {
				return a
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatalf("main:%d never appeared; the terminals: %+v", n, h.agents(h.as(0)))
	return api.Agent{}
}

// TestDefaultTitles: a terminal given no title is named after its program, without the shell's
// punctuation around it.
func TestDefaultTitles(t *testing.T) {
	t.Parallel()
	h := start(t, withTerminals(app.TerminalSpec{Command: "./lead.sh; exec sleep 60", Lead: true}, app.TerminalSpec{Command: "FOO=1 exec sleep 60"}))
	w := h.agent(h.as(1), api.Spawn, &api.SpawnBody{Command: []string{"/bin/sleep", "60"}})
	got := map[int]string{}
	for _, a := range h.agents(h.as(0)) {
		got[a.Terminal] = a.Title
	}
	if want := map[int]string{1: "lead.sh", 2: "sleep", w.Terminal: "sleep"}; !reflect.DeepEqual(got, want) {
		t.Errorf("titles %v, want %v", got, want)
	}
}

// TestReadEndedWorker: Read of a worker that ended shows every line it printed, the first one
// included: a command that is not found, and a screenful of lines.
func TestReadEndedWorker(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	missing := h.agent(c, api.Spawn, &api.SpawnBody{Command: []string{"no-such-command-krad"}})
	full := h.agent(c, api.Spawn, &api.SpawnBody{Command: []string{"sh", "-c", "seq 1 49; exit 3"}})
	for _, w := range []api.Agent{missing, full} {
		if a := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(30)}); a.State != api.StateFailed {
			t.Fatalf("%s: %s, want failed", w.Title, a.State)
		}
	}
	// The Wait returns on run's end report, which comes before tmux has handled the pane's
	// death (and written its line, in a tmux that still does): Read once tmux says it is dead.
	for _, w := range []api.Agent{missing, full} {
		h.waitPaneDead(w.Terminal)
	}
	if screen := h.read(c, missing.Terminal); !strings.Contains(screen, "no-such-command-krad") {
		t.Errorf("Read of the missing command does not say what was missing:\n%s", screen)
	}
	lines := strings.Split(h.read(c, full.Terminal), "\n")
	if len(lines) < 49 || lines[0] != "1" || lines[48] != "49" {
		t.Errorf("Read of a worker that printed 1 to 49 on a 50-line screen gave %d lines, first %q:\n%s", len(lines), lines[0], strings.Join(lines, "\n"))
	}
}

// waitPaneDead waits until tmux says terminal n's pane is dead.
func (h *harness) waitPaneDead(n int) {
	h.t.Helper()
	window := h.window(n)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.TrimSpace(h.tmuxOut("display-message", "-p", "-t", window, "#{pane_dead}")) == "1" {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("tmux did not say main:%d's pane is dead within 15 s", n)
		}
	}
}

// indexes is each window's index, by its @krad_terminal ("" for a window the app has not
// numbered).
func (h *harness) indexes() map[string]string {
	h.t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(h.tmuxOut("list-windows", "-t", "main", "-F", "#{@krad_terminal} #{window_index}")), "\n") {
		id, index, _ := strings.Cut(line, " ")
		got[id] = index
	}
	return got
}

// waitIndexes waits until every terminal the bus lists is at the window index of its number,
// and no other window is left, and fails the test if that does not come.
func (h *harness) waitIndexes(when string) {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		want := map[string]string{}
		for _, a := range h.agents(h.as(0)) {
			want[api.TerminalID{Environment: "main", Terminal: a.Terminal}.String()] = strconv.Itoa(a.Terminal)
		}
		got := h.indexes()
		if reflect.DeepEqual(got, want) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: windows (terminal: index) %v, want %v", when, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWindowIndexIsNumber: terminal N is tmux's window N (prefix-N shows it), with a tmux
// configuration that numbers windows from 1 and renumbers them when one closes: for configured
// terminals, spawned workers, a window a person opens (by prefix-c, or at an index of their
// choosing), after a terminal closes, and after the app restarts.
func TestWindowIndexIsNumber(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g base-index 1\nset -g renumber-windows on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withConf := func(c *app.Config) { c.Tmux.ConfigFile = conf }
	specs := withTerminals(app.TerminalSpec{Title: "lead", Lead: true}, app.TerminalSpec{Title: "shell"})
	h := start(t, withConf, specs)
	h.waitIndexes("at the start")
	c := h.as(1)
	w3 := h.agent(c, api.Spawn, &api.SpawnBody{Command: []string{"sleep", "60"}})
	w4 := h.agent(c, api.Spawn, &api.SpawnBody{Command: []string{"sleep", "60"}})
	if w3.Terminal != 3 || w4.Terminal != 4 {
		t.Fatalf("spawned main:%d and main:%d, want main:3 and main:4", w3.Terminal, w4.Terminal)
	}
	h.waitIndexes("after two spawns")
	if _, err := h.call(c, api.Close, &api.CloseBody{Target: 3}); err != nil {
		t.Fatal(err)
	}
	h.waitIndexes("after closing main:3")
	// prefix-c: tmux puts the window at the first free index, 3; the app numbers it 5.
	h.tmuxOut("new-window", "-d", "-t", "main:")
	h.waitAgent(5)
	h.waitIndexes("after a window opened by hand")
	// A window a person puts at the index the next terminal will have.
	h.tmuxOut("new-window", "-d", "-t", "main:7")
	h.waitAgent(6)
	h.waitIndexes("after a window opened by hand at index 7")
	if w := h.agent(c, api.Spawn, &api.SpawnBody{Command: []string{"sleep", "60"}}); w.Terminal != 7 {
		t.Errorf("spawned main:%d, want main:7", w.Terminal)
	}
	h.waitIndexes("after a spawn")
	if n := len(h.agents(h.as(0))); n != 6 {
		t.Errorf("%d terminals, want 6 (1, 2, 4, 5, 6, 7): %+v", n, h.agents(h.as(0)))
	}
	h.stop()
	h.tmuxOut("move-window", "-s", "main:4", "-t", "main:9") // moved by hand while the app was away
	h.start(testbin.Dir(t), withConf, specs)
	h.waitIndexes("after the restart")
	if w := h.agent(h.as(1), api.Spawn, &api.SpawnBody{Command: []string{"sleep", "60"}}); w.Terminal != 8 {
		t.Errorf("spawned main:%d after the restart, want main:8", w.Terminal)
	}
	h.waitIndexes("after a spawn after the restart")
}

// TestKradInWindowOpenedWithACommand: in a window a person opens with a command of their own
// (tmux new-window 'sh'), which gets the session's KRAD_ADE_ENDPOINT but no KRAD_ADE_TERMINAL,
// krad learns its terminal from the window, as krad-ade-agents shell does.
func TestKradInWindowOpenedWithACommand(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	// tmux gives a window opened from outside it the PATH of the tmux that asked: krad by its path.
	krad := filepath.Join(testbin.Dir(t), "krad")
	h.tmuxOut("new-window", "-d", "-t", "main:", `sleep 1; echo "T=[$KRAD_ADE_TERMINAL]"; `+krad+` report needs_input; echo "rc=$?"; sleep 60`)
	h.waitAgent(2)
	screen := h.waitScreen(h.as(1), 2, "rc=")
	if !strings.Contains(screen, "T=[]") || !strings.Contains(screen, "rc=0") {
		t.Errorf("krad report in the window failed:\n%s", screen)
	}
	for _, a := range h.agents(h.as(0)) {
		if a.Terminal == 2 && a.State != api.StateNeedsInput {
			t.Errorf("main:2 is %s, want needs_input, as it reported", a.State)
		}
	}
}

// TestNULIsRefused: a NUL byte, which no terminal can be typed and no argument can hold, in a
// Send's text or in a Spawn's prompt, command or agent, is refused with bad_request before
// anything happens: nothing is logged as a failure, no terminal opens, and a Wait after the
// refused Send answers at once rather than wait out the reaction window for a Send that never
// was.
func TestNULIsRefused(t *testing.T) {
	t.Parallel()
	var log apptest.Buffer
	h := start(t, lead(), withLog(&log), func(c *app.Config) { c.Reaction = time.Minute })
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "lines", Command: []string{"sh", "-c", `while read line; do echo "got: $line"; done`}})
	if a := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(30)}); a.State != api.StateIdle {
		t.Fatalf("the worker is %s, want idle", a.State)
	}
	_, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "a\x00b"})
	if code(err) != api.CodeBadRequest || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("Send of a NUL: %v, want bad_request about the NUL byte", err)
	}
	if a, err := h.call(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(20)}); err != nil {
		t.Errorf("Wait after the refused Send: %v, want the idle worker at once", err)
	} else {
		var ag api.Agent
		if a.Decode("Agent", &ag) != nil || ag.State != api.StateIdle {
			t.Errorf("Wait after the refused Send answered %s, want the idle worker", a.Body)
		}
	}
	for _, b := range []*api.SpawnBody{
		{Title: "p", Command: []string{"cat"}, Prompt: "a\x00b"},
		{Title: "c", Command: []string{"sh", "-c", "echo a\x00b"}},
		{Title: "a", Agent: "cla\x00ude"},
	} {
		if _, err := h.call(c, api.Spawn, b); code(err) != api.CodeBadRequest {
			t.Errorf("Spawn %q with a NUL: %v, want bad_request", b.Title, err)
		}
	}
	if n := len(h.agents(h.as(0))); n != 2 {
		t.Errorf("%d terminals after the refused Spawns, want the lead and the worker", n)
	}
	if logged := log.String(); strings.Contains(logged, "request failed") || strings.Contains(logged, "level=ERROR") {
		t.Errorf("the refused requests were logged as failures:\n%s", logged)
	}
}

// TestWindowInTheWay: a window that stands at the index a new terminal's number needs moves out
// of the way, never onto another terminal's number. Here, with tmux numbering windows from 1,
// a person moved the shell (main:2) to index 3 and the lead (main:1) to index 2: the next Spawn,
// main:3, needs index 3, and the shell cannot go back to 2. tmux's first free index would be 1,
// the lead's number; the app puts it at 0, which no terminal ever has.
func TestWindowInTheWay(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g base-index 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := start(t, func(c *app.Config) { c.Tmux.ConfigFile = conf }, withTerminals(app.TerminalSpec{Title: "lead", Lead: true}, app.TerminalSpec{Title: "shell"}))
	h.waitIndexes("at the start")
	h.tmuxOut("move-window", "-s", "main:2", "-t", "main:3")
	h.tmuxOut("move-window", "-s", "main:1", "-t", "main:2")
	if w := h.agent(h.as(1), api.Spawn, &api.SpawnBody{Command: []string{"sleep", "60"}}); w.Terminal != 3 {
		t.Fatalf("spawned main:%d, want main:3", w.Terminal)
	}
	got := h.indexes()
	if want := map[string]string{"main:1": "2", "main:2": "0", "main:3": "3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("windows (terminal: index) %v, want %v: the shell moved aside to 0, not onto a terminal's number", got, want)
	}
}

// TestPrefixCShowsTheNewWindow: a window a person opens with prefix c (new-window without -d,
// which makes it the session's current window) at an index the app moves it from is still the
// window the session shows once it has its number, so that the person's next command runs in it,
// not in the terminal they were on; and it has one name in krad list and in tmux, whatever runs
// in it later.
func TestPrefixCShowsTheNewWindow(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Command: []string{"sleep", "60"}})
	if _, err := h.call(c, api.Close, &api.CloseBody{Target: api.Target(w.Terminal)}); err != nil {
		t.Fatal(err)
	}
	h.tmuxOut("select-window", "-t", "main:1")
	// tmux puts it at index 2, free since main:2 closed; the app numbers it 3 and moves it there.
	h.tmuxOut("new-window", "-t", "main:")
	h.waitAgent(3)
	h.waitIndexes("after prefix c")
	var current, name string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out := strings.TrimSpace(h.tmuxOut("display-message", "-p", "-t", "main:", "#{window_index} #{window_name}"))
		if current, name, _ = strings.Cut(out, " "); current == "3" {
			break
		}
	}
	if current != "3" {
		t.Errorf("the session shows window %s after prefix c, want the new one, 3", current)
	}
	var title string
	for _, a := range h.agents(h.as(0)) {
		if a.Terminal == 3 {
			title = a.Title
		}
	}
	if title != name || title == "krad-ade-agents" || title == "" {
		t.Errorf("krad list titles the new window %q, tmux names it %q: want one name, the shell's", title, name)
	}
	// tmux keeps the name: what runs in it later does not rename it away from the list's title.
	h.typeIn(3, "exec sleep 60")
	time.Sleep(time.Second)
	if got := strings.TrimSpace(h.tmuxOut("display-message", "-p", "-t", "main:3", "#{window_name}")); got != title {
		t.Errorf("tmux renamed the window %q once sleep ran in it, the list says %q", got, title)
	}
}
