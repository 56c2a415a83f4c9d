package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/internal/screentest"
	"github.com/krad-ade/krad/internal/testbin"
)

// screen is krad-ade started as a person starts it, on a terminal: a pane of a tmux server of the
// test's own (not the app's), driven with send-keys and read with capture-pane (screentest).
type screen struct {
	*screentest.Screen
	t    *testing.T
	home string // the app's HOME, XDG_CONFIG_HOME and TMUX_TMPDIR
}

// uiPatience is how long the screen may take to show what a test waits for: the machine is
// shared, so it is generous; what it measures is logged, not asserted.
const uiPatience = screentest.Patience

// startScreen starts krad-ade in a w×h pane, with a config.toml holding config, and extra
// variables in its environment.
func startScreen(t *testing.T, w, h int, config string, extra []string, args ...string) *screen {
	t.Helper()
	testbin.Need(t, "tmux", "tmux")
	bin := testbin.Dir(t)
	home := t.TempDir()
	if config != "" {
		if err := os.MkdirAll(filepath.Join(home, "krad-ade"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "krad-ade", "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append(baseEnv(bin, home), "TERM=xterm-256color", "LANG=C.UTF-8", "XDG_STATE_HOME="+filepath.Join(home, "state"))
	env = append(env, extra...)
	t.Cleanup(func() { killTmux(home) }) // after the test's own server: cleanups run last first
	sc := screentest.Start(t, filepath.Join(home, "test-tmux.sock"), w, h, env, append([]string{filepath.Join(bin, "krad-ade")}, args...))
	return &screen{Screen: sc, t: t, home: home}
}

func (s *screen) tmux(args ...string) *exec.Cmd { return s.Tmux(args...) }

// appTmux runs tmux on the app's own server.
func (s *screen) appTmux(args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-L", "krad-ade"}, args...)...)
	cmd.Env = []string{"TMUX_TMPDIR=" + s.home, "PATH=/usr/bin:/bin"}
	return cmd
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
command = "krad spawn --title w1 -- sleep 600; krad spawn --title w2 -- sh -c 'sleep 3; date +%s.%N > $HOME/changed; exit 3'; sleep 600"
`

// TestUI uses krad-ade as a person at a terminal does: the agents appear as the lead spawns
// workers, a state change shows, Enter attaches and a detach comes back, n starts a lead with a
// lead's rights, x closes a terminal and X a lead's workers, after asking, s toggles discovery in config.toml with its comments kept, the screen follows
// resizes, and q leaves the terminals running.
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

	// The screen and the log file never hold the bus token.
	token := readToken(t, filepath.Join(s.home, "krad-ade", "api.json"))
	t.Cleanup(func() {
		b, _ := os.ReadFile(filepath.Join(s.home, "state", "krad-ade", "krad-ade.log"))
		if !strings.Contains(string(b), "msg=serving") {
			t.Errorf("the log file lacks the log lines: %q", b)
		}
		if strings.Contains(string(b), token) || strings.Contains(s.Seen(), token) {
			t.Error("the token was shown or logged")
		}
	})

	// Enter attaches to w1's window; a detach comes back to the UI.
	s.keys("/", "w1", "Enter")
	s.waitFor(`filter "w1": 1 shown`)
	s.keys("Enter")
	text, _ = s.waitFor(`\[main\] `) // the app's tmux's status line
	if strings.Contains(text, "krad-ade ·") {
		t.Errorf("the UI is still drawn while attached:\n%s", text)
	}
	if out, err := s.appTmux("display-message", "-p", "-t", "main", "#{window_index}").Output(); err != nil || strings.TrimSpace(string(out)) != "2" {
		t.Errorf("attached to window %q (%v), want w1's, 2", out, err)
	}
	s.detach()
	s.waitFor(`back from main:2`)
	s.keys("Escape")
	s.waitFor(`krad-ade · \d+ agents · \d+ need you *\n`) // the filter is gone

	// n names a lead; its command spawns, which only a lead may.
	s.keys("n")
	s.waitFor(`New lead`)
	s.keys("named", "Tab", "krad spawn --title child -- sleep 600; sleep 600", "Tab", "Tab", "Enter")
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

// detach detaches the person's client from the app's tmux, as C-b d would: not the app's own
// control client.
func (s *screen) detach() {
	s.t.Helper()
	out, err := s.appTmux("list-clients", "-F", "#{client_control_mode} #{client_name}").Output()
	if err != nil {
		s.t.Fatalf("list-clients: %v", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, ok := strings.CutPrefix(l, "0 "); ok {
			if out, err := s.appTmux("detach-client", "-t", name).CombinedOutput(); err != nil {
				s.t.Fatalf("detach-client: %v: %s", err, out)
			}
			return
		}
	}
	s.t.Fatalf("no attached client among %q", out)
}

// wantModesRestored checks that the pane is back to a plain terminal: the UI left the alternate
// screen, showed the cursor, and turned off the mouse and the application keypad.
func (s *screen) wantModesRestored() {
	s.t.Helper()
	s.WantModesRestored()
}

// readToken reads the token from api.json.
func readToken(t *testing.T, path string) string {
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

func waitFile(t *testing.T, path string, exists bool) {
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

// askpassConfig is a terminal whose program asks git's question twice, as git asks it: it runs
// $GIT_ASKPASS with the prompt and reads the answer from its output.
const askpassConfig = `[[terminal]]
title = "pusher"
command = """for i in 1 2 3; do "$GIT_ASKPASS" "Password for 'https://pat@git.example.com': " > $HOME/answer$i; echo $? > $HOME/rc$i; done; sleep 600"""
`

// TestUIAnswersGitsPrompt: git's prompt in a terminal comes to the person as the UI's modal,
// naming the terminal and host that asked; what they type is masked, and goes to that git
// (Enter); Esc refuses the next prompt, and git's askpass fails. The answer is on no screen and
// in no log. Ctrl-C with the third prompt open closes the UI: that askpass fails too, and the
// terminal is given back with its modes restored.
func TestUIAnswersGitsPrompt(t *testing.T) {
	s := startScreen(t, 120, 40, askpassConfig, nil)
	text, took := s.waitFor(`Git asks`)
	t.Logf("the prompt showed %s after the UI first looked", took)
	flat := strings.Join(strings.Fields(text), " ")
	for _, want := range []string{"git in terminal main:1, on this computer, asks:", "Password for 'https://pat@git.example.com':"} {
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
	s.waitFor(`Git asks`)
	s.keys("Escape")
	rc = exitOf(t, filepath.Join(s.home, "rc2"))
	answer, _ = os.ReadFile(filepath.Join(s.home, "answer2"))
	if len(answer) != 0 || rc == "0" {
		t.Errorf("the refused askpass printed %q and exited %s; want nothing and a failure", answer, rc)
	}
	// The third: the UI closes with it open.
	s.waitFor(`Git asks`)
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
