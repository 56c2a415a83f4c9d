package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	kradapp "github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/screentest"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// screen is krad-ade started as a person starts it, on a terminal: a pane of a tmux server of the
// test's own (not the app's), driven with send-keys and read with capture-pane (screentest).
type screen struct {
	*screentest.Screen
	t    testing.TB
	home string // the app's HOME, XDG_CONFIG_HOME and TMUX_TMPDIR
}

// uiPatience is how long the screen may take to show what a test waits for: the machine is
// shared, so it is generous; what it measures is logged, not asserted.
const uiPatience = screentest.Patience

// startScreen starts krad-ade in a w×h pane, with a config.toml holding config, and extra
// variables in its environment.
func startScreen(t testing.TB, w, h int, config string, extra []string, args ...string) *screen {
	t.Helper()
	home := t.TempDir()
	if config != "" {
		if err := os.MkdirAll(filepath.Join(home, "krad-ade"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "krad-ade", "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return startScreenIn(t, home, "", w, h, extra, args...)
}

// startScreenIn starts krad-ade in a w×h pane with home as its HOME (and config home), in the
// working folder dir ("" for the test's), with extra variables in its environment (a later one
// of a name wins).
func startScreenIn(t testing.TB, home, dir string, w, h int, extra []string, args ...string) *screen {
	t.Helper()
	testbin.Need(t, "tmux", "tmux")
	bin := testbin.Dir(t)
	env := append(baseEnv(bin, home), "TERM=xterm-256color", "LANG=C.UTF-8", "XDG_STATE_HOME="+filepath.Join(home, "state"))
	env = append(env, extra...)
	t.Cleanup(func() { killTmux(home) }) // after the test's own server: cleanups run last first
	// Stopped at the end, krad-ade writes its log and removes its files before the folders go.
	opts := []screentest.Option{screentest.StopAtCleanup()}
	if dir != "" {
		opts = append(opts, screentest.In(dir))
	}
	sc := screentest.Start(t, filepath.Join(home, "test-tmux.sock"), w, h, env, append([]string{filepath.Join(bin, "krad-ade")}, args...), opts...)
	return &screen{Screen: sc, t: t, home: home}
}

func (s *screen) tmux(args ...string) *exec.Cmd { return s.Tmux(args...) }

// appTmux runs tmux on the app's own server.
func (s *screen) appTmux(args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-L", "krad-ade"}, args...)...)
	cmd.Env = []string{"TMUX_TMPDIR=" + s.home, "PATH=/usr/bin:/bin"}
	return cmd
}

// waitForWindow waits until the app's tmux shows a live window named title, the holder gone.
func (s *screen) waitForWindow(title string) {
	s.t.Helper()
	var out []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		out, _ = s.appTmux("list-windows", "-a", "-F", "#{pane_dead} #{window_name}").Output()
		if strings.Contains(string(out), "0 "+title+"\n") && !strings.Contains(string(out), kradapp.HolderName) {
			return
		}
	}
	s.t.Fatalf("no window %q in the app's tmux within 30 s: %q", title, out)
}

// capture is the pane's text; with escapes, its SGR sequences too.
func (s *screen) capture(escapes bool) string { return s.Capture(escapes) }

// keys sends keys as tmux names them ("Enter", "Escape", "C-c") or as text.
func (s *screen) keys(keys ...string) {
	s.t.Helper()
	s.Keys(keys...)
}

// waitFor waits until the screen matches re, and returns the screen and how long it took.
func (s *screen) waitFor(re string) (string, time.Duration) {
	s.t.Helper()
	return s.WaitFor(re)
}

// ttyMode says whether the pane's terminal reads line by line or key by key, and echoes.
func (s *screen) ttyMode() string { return s.TTYMode() }

// waitGone waits until the screen no longer shows text.
func (s *screen) waitGone(text string) {
	s.t.Helper()
	s.WaitGone(text)
}

// rowOf is the agents pane's row whose title is title.
func rowOf(text, title string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasSuffix(strings.TrimRight(l, " "), " "+title) && strings.Contains(l, "main:") {
			return l
		}
	}
	return ""
}

const uiConfig = `# my krad-ade settings
# (kept by the UI's toggle)

discovery = true   # let other programs find the agents API

[[terminal]]
title = "lead"
lead = true
command = "krad spawn --title w1 -- sleep 600; krad spawn --title w2 -- sh -c 'echo TERM$((6*7))INAL; sleep 3; date +%s.%N > $HOME/changed; exit 3'; sleep 600"
`

// uiMarker is what w2 of uiConfig prints (its command computes it, so that the command's text
// does not hold it): terminal contents, which no screen of the UI may show uninvited.
const uiMarker = "TERM42INAL"

// TestUI uses krad-ade as a person at a terminal does: the agents appear as the lead spawns
// workers, a state change shows, Enter attaches and a detach comes back, n starts a lead with a
// lead's rights, x closes a terminal and X a lead's workers, after asking, s toggles discovery in
// config.toml with its comments kept, the screen follows resizes, and q leaves the terminals
// running. No screen of the UI shows what a worker printed, nor the token.
func TestUI(t *testing.T) {
	s := startScreen(t, 120, 40, uiConfig, nil)

	// The lead and its workers appear, live.
	text, took := s.waitFor(`(?s)main:2 .*w1.*main:3 .*w2`)
	t.Logf("the lead's two workers showed %s after the UI first looked", took)
	for _, title := range []string{"lead", "w1", "w2"} {
		if rowOf(text, title) == "" {
			t.Errorf("no row for %s:\n%s", title, text)
		}
	}
	if !strings.Contains(text, "this computer") || !strings.Contains(text, "── Log") || !strings.Contains(text, "krad-ade: bus on 127.0.0.1:") {
		t.Errorf("the environments or the log pane are missing:\n%s", text)
	}
	// w2 fails with 3: its row says so, readable without colour.
	text, _ = s.waitFor(`main:3 +worker +failed! .* 3 `)
	seen := time.Now()
	if b, err := os.ReadFile(filepath.Join(s.home, "changed")); err == nil {
		if f, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil {
			t.Logf("w2's failure showed at most %s after its process wrote its last line (polled every 20 ms; not asserted)",
				seen.Sub(time.Unix(0, int64(f*1e9))).Round(time.Millisecond))
		}
	}

	// w2 printed the marker, in its own terminal.
	if out, err := s.appTmux("capture-pane", "-p", "-t", "main:3").Output(); err != nil || !strings.Contains(string(out), uiMarker) {
		t.Fatalf("w2's pane: %q (%v), want the marker it printed", out, err)
	}

	// The screens and the log file never hold the bus token, nor what a terminal printed (the
	// only screens that do are those of an attach, which show w1's window, not w2's).
	token := readToken(t, filepath.Join(s.home, "krad-ade", "api.json"))
	t.Cleanup(func() {
		b, _ := os.ReadFile(filepath.Join(s.home, "state", "krad-ade", "krad-ade.log"))
		if !strings.Contains(string(b), "msg=serving") {
			t.Errorf("the log file lacks the log lines: %q", b)
		}
		if strings.Contains(string(b), token) || strings.Contains(s.Seen(), token) {
			t.Error("the token was shown or logged")
		}
		if strings.Contains(string(b), uiMarker) || strings.Contains(s.Seen(), uiMarker) {
			t.Error("what a worker printed was shown or logged")
		}
	})

	// Enter attaches to w1's window; a detach comes back to the UI.
	s.keys("/", "w1", "Enter")
	s.waitFor(`filter "w1": 1 shown`)
	for range 2 { // and again: the UI takes the terminal back as it gave it
		s.attachAndBack(s.appTmux, `\[main\] `, "main:2", "2") // the app's tmux's status line
	}
	// No key reached w1 in the handover (its terminal would echo it, an escape as ^[).
	if out, err := s.appTmux("capture-pane", "-p", "-t", "main:2").Output(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("w1's pane after two attaches: %q (%v), want it empty", out, err)
	}
	s.keys("Escape")
	s.waitFor(`krad-ade · \d+ agents · \d+ need you *\n`) // the filter is gone

	// n names a lead; its command spawns, which only a lead may.
	s.keys("n")
	s.waitFor(`New lead`)
	s.keys("named", "Tab", "krad spawn --title child -- sleep 600; sleep 600", "Tab", "Tab", "Tab", "Enter")
	text, _ = s.waitFor(`(?s)opened lead main:4.*`)
	text, _ = s.waitFor(`main:5 .*child`)
	if r := rowOf(text, "named"); !strings.Contains(r, "lead") {
		t.Errorf("the named lead's row: %q", r)
	}
	if r := rowOf(text, "child"); !strings.Contains(r, "main:4") && !regexp.MustCompile(`worker`).MatchString(r) {
		t.Errorf("the child's row: %q", r)
	}

	// x closes a terminal, after asking.
	s.keys("/", "child", "Enter")
	s.waitFor(`filter "child": 1 shown`)
	s.keys("x")
	s.waitFor(`Close main:5 \(worker "child"\)\? Its window and its process end\.`)
	s.keys("y")
	s.waitFor(`closed main:5`)
	s.waitFor(`filter "child": 0 shown`)
	s.keys("Escape")
	s.waitFor(`krad-ade · 4 agents · \d+ need you *\n`) // the filter is gone

	// X on the first lead closes its session's workers; the lead stays.
	s.keys("g", "X")
	s.waitFor(`Close the session of main:1 \("lead"\)\? Its 2 workers end; the lead stays\.`)
	s.keys("y")
	s.waitFor(`closed the workers of main:1`)
	text, _ = s.waitFor(`krad-ade · 2 agents`)
	if rowOf(text, "lead") == "" || rowOf(text, "named") == "" {
		t.Errorf("after X on main:1:\n%s", text)
	}

	// s toggles discovery: api.json goes, then comes back; config.toml keeps its comments.
	apiJSON := filepath.Join(s.home, "krad-ade", "api.json")
	cfgPath := filepath.Join(s.home, "krad-ade", "config.toml")
	s.keys("s")
	s.waitFor(`\[x\] Let other programs find the agents API`)
	s.keys("d")
	s.waitFor(`\[ \] Let other programs find the agents API`)
	waitFile(t, apiJSON, false)
	b, _ := os.ReadFile(cfgPath)
	if want := strings.Replace(uiConfig, "discovery = true   #", "discovery = false   #", 1); string(b) != want {
		t.Errorf("config.toml after the toggle:\n%s\nwant:\n%s", b, want)
	}
	if fi, err := os.Stat(cfgPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config.toml's mode: %v %v", fi.Mode(), err)
	}
	s.keys("d")
	s.waitFor(`\[x\] Let other programs find the agents API`)
	waitFile(t, apiJSON, true)
	if b, _ := os.ReadFile(cfgPath); string(b) != uiConfig {
		t.Errorf("config.toml after toggling back:\n%s", b)
	}
	s.keys("Escape")
	s.waitFor(`Enter attach · x close`)

	// Resizes: each size is used, nothing spills; too small says so.
	for _, size := range [][2]int{{80, 24}, {200, 60}, {20, 5}, {120, 40}} {
		if out, err := s.tmux("resize-window", "-t", "ui", "-x", strconv.Itoa(size[0]), "-y", strconv.Itoa(size[1])).CombinedOutput(); err != nil {
			t.Fatalf("resize-window: %v: %s", err, out)
		}
		want := `Enter attach · x close`
		if size[0] < 40 {
			want = `too small`
		}
		text, _ := s.waitFor(want)
		if size[0] >= 40 {
			s.waitFor(`(?m)^── Log ─{` + strconv.Itoa(size[0]-7) + `}$`) // the headings span the width
			text = s.capture(false)
			if n := strings.Count(text, "\n"); n != size[1] {
				t.Errorf("%v: %d lines", size, n)
			}
		}
		t.Logf("%dx%d:\n%s", size[0], size[1], text)
	}

	// q quits; the terminals keep running, and the terminal is as it was: no alternate screen,
	// the cursor shown.
	s.keys("q")
	text, _ = s.waitFor(`krad-ade exited 0`)
	s.wantModesRestored()
	if !strings.Contains(text, "the terminals keep running") {
		t.Errorf("after q:\n%s", text)
	}
	out, err := s.appTmux("list-windows", "-t", "main", "-F", "#{window_name}").Output()
	if err != nil || !strings.Contains(string(out), "lead") || !strings.Contains(string(out), "named") {
		t.Errorf("after q the app's windows are %q (%v), want them running", out, err)
	}
}

// detachPerson detaches the person's client from a tmux server (the app's here, or a host's),
// as C-b d would: not the app's own control client.
func detachPerson(t testing.TB, tmux func(args ...string) *exec.Cmd) {
	t.Helper()
	out, err := tmux("list-clients", "-F", "#{client_control_mode} #{client_name}").Output()
	if err != nil {
		t.Fatalf("list-clients: %v", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, ok := strings.CutPrefix(l, "0 "); ok {
			if out, err := tmux("detach-client", "-t", name).CombinedOutput(); err != nil {
				t.Fatalf("detach-client: %v: %s", err, out)
			}
			return
		}
	}
	t.Fatalf("no attached client among %q", out)
}

// modes are the pane's terminal modes: alternate screen, cursor shown, mouse, application keypad.
func (s *screen) modes() string {
	s.t.Helper()
	return s.Modes()
}

// wantModesRestored checks that the pane is back to a plain terminal: the UI left the alternate
// screen, showed the cursor, and turned off the mouse and the application keypad.
func (s *screen) wantModesRestored() {
	s.t.Helper()
	s.WantModesRestored()
}

// attachAndBack attaches to the agent the cursor is on (Enter), waits for the attached tmux's
// status line (statusRe), checks with onTmux that its client shows window, detaches the person's
// client of that tmux, and waits for the UI to say it is back from id: with the terminal's
// modes as the UI had them before, and its terminal reading key by key.
func (s *screen) attachAndBack(onTmux func(args ...string) *exec.Cmd, statusRe, id, window string) {
	s.t.Helper()
	before := s.modes()
	s.keys("Enter")
	text, _ := s.waitFor(statusRe)
	if strings.Contains(text, "krad-ade ·") {
		s.t.Errorf("the UI is still drawn while attached:\n%s", text)
	}
	session, _, _ := strings.Cut(id, ":")
	if out, err := onTmux("display-message", "-p", "-t", session, "#{window_index}").Output(); err != nil || strings.TrimSpace(string(out)) != window {
		s.t.Errorf("attached to window %q (%v), want %s's, %s", out, err, id, window)
	}
	detachPerson(s.t, onTmux)
	s.waitFor(`back from ` + regexp.QuoteMeta(id))
	if after := s.modes(); after != before {
		s.t.Errorf("the terminal's modes back in the UI (alternate screen, cursor, mouse, keypad): %q, before the attach %q", after, before)
	}
	// The UI reads key by key again, as it did before (ssh and tmux set and reset the
	// terminal's own modes too).
	if mode := s.ttyMode(); !strings.Contains(mode, "-icanon") || !strings.Contains(mode, "-echo") {
		s.t.Errorf("back in the UI, %s; want -icanon -echo", mode)
	}
}

// readToken reads the token from api.json.
func readToken(t testing.TB, path string) string {
	t.Helper()
	waitFile(t, path, true)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Token string }
	if err := json.Unmarshal(b, &f); err != nil || len(f.Token) < 16 {
		t.Fatalf("api.json: %v", err)
	}
	return f.Token
}

func waitFile(t testing.TB, path string, exists bool) {
	t.Helper()
	deadline := time.Now().Add(uiPatience)
	for {
		_, err := os.Stat(path)
		if (err == nil) == exists {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: exists=%v after %s, want %v", path, err == nil, uiPatience, exists)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const noColorConfig = "[[environment]]\nname = \"build\"\nssh = \"127.0.0.1:1\"\n"

// Under NO_COLOR the UI draws no colour, and the states still read; an SSH environment that
// cannot connect says why, with a hint; a config.toml that breaks
// shows its line and keeps the settings, and the error goes once it is fixed; tmux killed from outside shows the environment down,
// then up; SIGTERM gives the terminal back; --headless on a terminal logs as before.
func TestUINoColorAndHeadless(t *testing.T) {
	s := startScreen(t, 100, 30, noColorConfig, []string{"NO_COLOR=1"})
	s.waitFor(`main:1 +shell`)
	// An SSH environment that cannot connect: its row says why, and what to do.
	s.waitFor(`build +ssh 127.0.0.1:1 +failed: authentication of [^ ]+@127\.0\.0\.1:1 failed: no key`)
	s.waitFor(`hint: add your key to your ssh agent \(ssh-add\)`)
	text := s.capture(true)
	if m := regexp.MustCompile("\x1b\\[[0-9;]*(3[0-7]|9[0-7]|38;[25])[;m]").FindString(text); m != "" {
		t.Errorf("a colour under NO_COLOR: %q in\n%q", m, text)
	}

	// A config.toml that breaks while the UI runs: the line shows, the settings stay.
	cfgPath := filepath.Join(s.home, "krad-ade", "config.toml")
	if err := os.WriteFile(cfgPath, []byte("discovery = false\nquiet = \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.waitFor(`config.toml not applied: .*line 2`)
	s.keys("s")
	s.waitFor(`\[x\] Let other programs find the agents API`)
	s.keys("d") // the toggle refuses a file that does not parse, and says why
	s.waitFor(`error: discovery not changed: .*line 2`)
	if b, _ := os.ReadFile(cfgPath); string(b) != "discovery = false\nquiet = \n" {
		t.Errorf("the toggle wrote a broken file: %q", b)
	}
	s.waitFor(`config.toml not applied, the last good settings stay: .*line 2`)
	// Fixed back to what it said: the error goes.
	if err := os.WriteFile(cfgPath, []byte(noColorConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	s.waitGone(`config.toml not applied, the last good settings stay`)
	s.keys("Escape")
	s.waitFor(`Enter attach · x close`)

	// tmux killed from outside: the environment shows down, then up again.
	if out, err := s.appTmux("kill-server").CombinedOutput(); err != nil {
		t.Fatalf("kill-server: %v: %s", err, out)
	}
	s.waitFor(`main +this computer +down: `)
	s.waitFor(`main +this computer +up`)

	// SIGTERM stops the app and gives the terminal back.
	pid, err := os.ReadFile(filepath.Join(s.home, "krad-ade", "krad-ade.lock"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err != nil {
		t.Fatalf("the lock's pid %q: %v", pid, err)
	}
	if err := syscall.Kill(n, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.waitFor(`krad-ade exited 0`)
	s.wantModesRestored()

	h := startScreen(t, 100, 30, "", nil, "--headless")
	text, _ = h.waitFor(`krad-ade: environment main: tmux -L krad-ade attach -t main`)
	if !strings.Contains(text, "krad-ade: bus on 127.0.0.1:") || !strings.Contains(text, "level=INFO msg=serving") || strings.Contains(text, "── Agents") {
		t.Errorf("--headless on a terminal:\n%s", text)
	}
	h.keys("C-c")
	h.waitFor(`krad-ade exited 0`)
}

// askpassConfig is a terminal whose program asks git's question three times, as git asks it: it
// runs $GIT_ASKPASS with the prompt and reads the answer from its output. Each prompt says which
// it is, so that a test waits for the next modal, not the one still on the screen.
const askpassConfig = `[[terminal]]
title = "pusher"
command = """for i in 1 2 3; do "$GIT_ASKPASS" "Password for 'https://pat@git.example.com' ($i of 3): " > $HOME/answer$i; echo $? > $HOME/rc$i; done; sleep 600"""
`

// TestUIAnswersGitsPrompt: git's prompt in a terminal comes to the person as the UI's modal,
// naming the terminal and host that asked; what they type is masked, and goes to that git
// (Enter); Esc refuses the next prompt, and git's askpass fails. The answer is on no screen and
// in no log. Ctrl-C with the third prompt open closes the UI: that askpass fails too, and the
// terminal is given back with its modes restored.
func TestUIAnswersGitsPrompt(t *testing.T) {
	s := startScreen(t, 120, 40, askpassConfig, nil)
	text, took := s.waitFor(`Git asks(.|\n)*\(1 of 3\)`)
	t.Logf("the prompt showed %s after the UI first looked", took)
	flat := strings.Join(strings.Fields(text), " ")
	// The asker is the program that ran the askpass: the terminal's shell here, in git's place.
	for _, want := range []string{"sh in terminal main:1, on this computer, asks:", "Password for 'https://pat@git.example.com' (1 of 3):"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the modal lacks %q:\n%s", want, text)
		}
	}
	const secret = "hunter2-ui"
	s.keys("-l", secret)
	s.waitFor(`\*{10}`) // masked as it is typed
	s.keys("Enter")
	rc := exitOf(t, filepath.Join(s.home, "rc1"))
	answer, _ := os.ReadFile(filepath.Join(s.home, "answer1"))
	if string(answer) != secret+"\n" || rc != "0" {
		t.Errorf("the first askpass printed %q and exited %s; want the answer and 0", answer, rc)
	}

	// The second: refused.
	s.waitFor(`Git asks(.|\n)*\(2 of 3\)`)
	s.keys("Escape")
	rc = exitOf(t, filepath.Join(s.home, "rc2"))
	answer, _ = os.ReadFile(filepath.Join(s.home, "answer2"))
	if len(answer) != 0 || rc == "0" {
		t.Errorf("the refused askpass printed %q and exited %s; want nothing and a failure", answer, rc)
	}
	// The third: the UI closes with it open.
	s.waitFor(`Git asks(.|\n)*\(3 of 3\)`)
	s.keys("-l", "typed-but-never-sent")
	s.waitFor(`\*{20}`)
	s.keys("C-c")
	s.waitFor(`krad-ade exited`)
	rc = exitOf(t, filepath.Join(s.home, "rc3"))
	answer, _ = os.ReadFile(filepath.Join(s.home, "answer3"))
	if len(answer) != 0 || rc == "0" {
		t.Errorf("the askpass open when the UI closed printed %q and exited %s; want nothing and a failure", answer, rc)
	}
	s.wantModesRestored()
	logged, _ := os.ReadFile(filepath.Join(s.home, "state", "krad-ade", "krad-ade.log"))
	for _, typed := range []string{secret, "typed-but-never-sent"} {
		if strings.Contains(s.Seen(), typed) || strings.Contains(string(logged), typed) {
			t.Errorf("what the person typed (%s) was shown or logged", typed)
		}
	}
}

// exitOf is the exit code a terminal's script wrote to path, once it has written it.
func exitOf(t *testing.T, path string) string {
	t.Helper()
	for deadline := time.Now().Add(uiPatience); ; time.Sleep(50 * time.Millisecond) {
		if b, _ := os.ReadFile(path); strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written within %s", path, uiPatience)
		}
	}
}

// TestUICtrlC: Ctrl-C leaves the UI as q does, whatever is open (the list, the new lead's form,
// git's prompt): the terminal's modes restored, the app stopped cleanly, the agents running.
func TestUICtrlC(t *testing.T) {
	for _, tc := range []struct {
		name, config, ready, open, shows string
	}{
		// Ready once its process has started (working, or idle after the quiet spell): a row
		// shows as the terminal is registered, before its window exists.
		{"the list", "[[terminal]]\ntitle = \"napper\"\ncommand = \"sleep 600\"\n", `main:1 +\S+ +(working|idle) .* napper`, "", `main:1 .* napper`},
		{"the new lead's form", "[[terminal]]\ntitle = \"napper\"\ncommand = \"sleep 600\"\n", `main:1 +\S+ +(working|idle) .* napper`, "n", `New lead`},
		// The prompt comes as soon as the terminal runs, and covers the list.
		{"git's prompt", askpassConfig, `Git asks`, "", `Git asks`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScreen(t, 100, 30, tc.config, nil)
			s.waitFor(tc.ready)
			if tc.open != "" {
				s.keys(tc.open)
			}
			s.waitFor(tc.shows)
			title := regexp.MustCompile(`title = "(\w+)"`).FindStringSubmatch(tc.config)[1]
			// The agent is listed from the moment the app begins to open its window; a Ctrl-C
			// before the window is the agent's stops the opening and leaves no half-made window.
			// Once tmux shows it under its title, it must outlive the app.
			s.waitForWindow(title)
			s.keys("C-c")
			text, _ := s.waitFor(`krad-ade exited 0`)
			s.wantModesRestored()
			if !strings.Contains(text, "the terminals keep running") {
				t.Errorf("after Ctrl-C:\n%s", text)
			}
			out, err := s.appTmux("list-windows", "-t", "main", "-F", "#{pane_dead} #{window_name}").Output()
			if err != nil || !strings.Contains(string(out), "0 "+title+"\n") {
				t.Errorf("after Ctrl-C the app's panes are %q (%v), want the agent running", out, err)
			}
		})
	}
}

// TestUIConfigWriteFails: a toggle of discovery whose write to config.toml fails (the file made
// immutable, or its folder read-only, while the UI runs) says why, and changes nothing: not the
// file, not the folder (no temporary file left), not api.json, not the setting shown.
func TestUIConfigWriteFails(t *testing.T) {
	const cfg = "# mine\ndiscovery = true # keep\n"
	s := startScreen(t, 120, 40, cfg, nil)
	s.waitFor(`main:1 +shell`)
	dir := filepath.Join(s.home, "krad-ade")
	cfgPath, apiJSON := filepath.Join(dir, "config.toml"), filepath.Join(dir, "api.json")
	waitFile(t, apiJSON, true)
	apiBefore, err := os.ReadFile(apiJSON)
	if err != nil {
		t.Fatal(err)
	}
	listing := func() []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	filesBefore := listing()
	// Root writes a read-only folder all the same; an immutable file it cannot replace.
	var undo func()
	if os.Getuid() == 0 {
		testbin.Need(t, "chattr", "e2fsprogs")
		if out, err := exec.Command("chattr", "+i", cfgPath).CombinedOutput(); err != nil {
			t.Skipf("chattr +i (the file system may not take it): %v: %s", err, out)
		}
		undo = func() { _ = exec.Command("chattr", "-i", cfgPath).Run() }
	} else {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		undo = func() { _ = os.Chmod(dir, 0o700) }
	}
	t.Cleanup(undo) // before the app is stopped, should the test end early

	s.keys("s")
	s.waitFor(`\[x\] Let other programs find the agents API`)
	s.keys("d")
	s.waitFor(`error: discovery not changed: write ` + regexp.QuoteMeta(cfgPath))
	text, _ := s.waitFor(`not written, nothing changed: `)
	if flat := strings.Join(strings.Fields(text), " "); !regexp.MustCompile(`not written, nothing changed: discovery not changed: write \S+: .*(operation not permitted|permission denied)`).MatchString(flat) {
		t.Errorf("the settings do not say why the write failed:\n%s", text)
	}
	time.Sleep(2 * time.Second) // what a write would have changed, the app applies within a second
	if b, _ := os.ReadFile(cfgPath); string(b) != cfg {
		t.Errorf("config.toml after the failed write: %q, want it unchanged", b)
	}
	if after := listing(); !slices.Equal(after, filesBefore) {
		t.Errorf("the config folder after the failed write: %q, was %q", after, filesBefore)
	}
	if b, err := os.ReadFile(apiJSON); err != nil || string(b) != string(apiBefore) {
		t.Errorf("api.json after the failed write: %q (%v), want it unchanged", b, err)
	}
	if text := s.capture(false); !strings.Contains(text, "[x] Let other programs find the agents API") {
		t.Errorf("the setting shown after the failed write:\n%s", text)
	}
	s.keys("Escape")
	s.waitFor(`Enter attach · x close`)
	undo() // so that the app's clean exit can remove api.json
	s.keys("q")
	s.waitFor(`krad-ade exited 0`)
}

// changesConfig is a lead that makes a group and spawns a worker in it, which changes a file and
// adds one holding escape sequences (a screen clear, a title), then says where it works.
const changesConfig = `[[terminal]]
title = "lead"
lead = true
command = '''krad worktree create fix-retry && krad spawn --group fix-retry --title fixer -- sh -c 'printf "package retry\n// fixed\n" > retry.go; printf "evil \033[2J\033]0;pwned\007 end\n" > evil.txt; pwd > $HOME/worktree; sleep 600'; sleep 600'''
`

// repoAndConfig makes a git repository whose first commit holds files (none: an empty commit),
// and a home whose krad-ade/config.toml is config: the folders a test starts krad-ade in, and with.
func repoAndConfig(t *testing.T, config string, files map[string]string) (home, repo string) {
	t.Helper()
	testbin.Need(t, "git", "git")
	home, repo = t.TempDir(), t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(home, "krad-ade"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "krad-ade", "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, repo
}

// TestUIChanges: c on an agent in a group shows the group's changes as the bus's Changes has
// them: the files with their counts, then the patch, its added lines coloured (plain under
// NO_COLOR), a file's escape sequences shown escaped, never acting on the terminal; Esc closes
// it; a group whose checkout is gone shows the error, not "no changes".
func TestUIChanges(t *testing.T) {
	testbin.Need(t, "git", "git")
	for _, noColor := range []bool{false, true} {
		t.Run(fmt.Sprintf("NO_COLOR=%v", noColor), func(t *testing.T) {
			home, repo := repoAndConfig(t, changesConfig, map[string]string{"retry.go": "package retry\n"})
			var extra []string
			if noColor {
				extra = append(extra, "NO_COLOR=1")
			}
			s := startScreenIn(t, home, repo, 120, 40, extra)
			s.waitFor(`main:2 .* fix-retry +fixer`)
			worktree := strings.TrimSpace(exitOf(t, filepath.Join(home, "worktree")))

			s.keys("/", "fixer", "Enter")
			s.waitFor(`filter "fixer": 1 shown`)
			s.keys("c")
			text, _ := s.waitFor(`(?s)Changes of group fix-retry \(main:2\).*\+// fixed`)
			for _, want := range []string{
				" M  retry.go  +1 -0", " A  evil.txt  +1 -0", "2 files changed, 2 insertions(+), 0 deletions(-)",
				"diff --git a/retry.go b/retry.go", "@@ -1 +1,2 @@", `+evil \x1b[2J\x1b]0;pwned\a end`,
			} {
				if !strings.Contains(text, want) {
					t.Errorf("the changes view lacks %q:\n%s", want, text)
				}
			}
			if out, err := s.tmux("display-message", "-p", "-t", "ui", "#{pane_title}").Output(); err != nil || strings.Contains(string(out), "pwned") {
				t.Errorf("the pane's title is %q (%v): the file's escape acted on the terminal", out, err)
			}
			colours := regexp.MustCompile("\x1b\\[[0-9;]*(3[0-7]|9[0-7]|38;[25])[;m]")
			styled := s.capture(true)
			var added string
			for _, l := range strings.Split(styled, "\n") {
				if strings.Contains(l, "// fixed") {
					added = l
				}
			}
			if got := colours.MatchString(added); got == noColor {
				t.Errorf("NO_COLOR=%v: the added line %q is coloured: %v", noColor, added, got)
			}
			if noColor {
				if m := colours.FindString(styled); m != "" {
					t.Errorf("a colour under NO_COLOR: %q", m)
				}
			}
			s.keys("Escape")
			s.waitGone("Changes of group")

			// The group's checkout deleted: c shows why there are none to show.
			if err := os.RemoveAll(worktree); err != nil {
				t.Fatal(err)
			}
			s.keys("c")
			text, _ = s.waitFor(`error: the changes of group fix-retry could not be read: `)
			if flat := strings.Join(strings.Fields(text), " "); !strings.Contains(flat, "is gone (deleted from under git)") || strings.Contains(flat, "no changes") {
				t.Errorf("the changes of a group whose checkout is gone:\n%s", text)
			}
			s.keys("q")
			s.waitGone("Changes of group")
			s.keys("q")
			s.waitFor(`krad-ade exited 0`)
		})
	}
}

const heldConfig = `[[terminal]]
title = "lead"
lead = true
command = '''krad worktree create vendoring && krad spawn --group vendoring --title vendorer -- sh -c 'git init -q inner && git -C inner -c user.name=w -c user.email=w@w commit -q --allow-empty -m inner-work && pwd > $HOME/worktree; sleep 600'; sleep 600'''
`

// TestUICloseHeldGroup: x on the last terminal of a group whose checkout holds a repository of
// the worker's own asks first, and what it says is what then happens: a snapshot and the branch
// are kept, and a checkout that holds a nested repository is not removed but held. After y the
// log says the group is held, and the checkout and the nested repository's commit are there.
func TestUICloseHeldGroup(t *testing.T) {
	home, repo := repoAndConfig(t, heldConfig, nil)
	s := startScreenIn(t, home, repo, 120, 40, nil)
	s.waitFor(`main:2 .* vendoring +vendorer`)
	checkout := strings.TrimSpace(exitOf(t, filepath.Join(home, "worktree")))

	s.keys("/", "vendorer", "Enter")
	s.waitFor(`filter "vendorer": 1 shown`)
	s.keys("x")
	text, _ := s.waitFor(`y closes`)
	flat := strings.Join(strings.Fields(text), " ")
	for _, want := range []string{
		"If it is group vendoring's last terminal, the group retires: its uncommitted work is kept as a snapshot, and its branch if it holds any work",
		"its checkout is removed, unless it holds a repository of its own (a .git in a folder of it) or a submodule with work of its own, which a snapshot cannot keep: then the checkout stays, held, until that work is moved out or krad retire --force vendoring removes it",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("the close's question lacks %q:\n%s", want, text)
		}
	}
	s.keys("y")
	s.waitFor(`filter "vendorer": 0 shown`)
	s.waitFor(`main: group vendoring is held: its checkout `)
	if out, err := exec.Command("git", "-C", filepath.Join(checkout, "inner"), "log", "--format=%s").Output(); err != nil || strings.TrimSpace(string(out)) != "inner-work" {
		t.Errorf("after the close, the nested repository's log: %q (%v), want its commit kept", out, err)
	}
	s.keys("q")
	s.waitFor(`krad-ade exited 0`)
}
