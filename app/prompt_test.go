package app_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/leaktest"
)

// newPrompt is a prompt no process, file or log could hold by chance.
func newPrompt(t testing.TB) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "prompt-" + hex.EncodeToString(b)
}

// tmuxKnows is everything the worker's tmux server holds that a prompt could hide in: the
// windows' names, pane titles and start commands, every option and every environment.
func (h *harness) tmuxKnows() string {
	h.t.Helper()
	var all strings.Builder
	for _, args := range [][]string{
		{"list-windows", "-a", "-F", "#{window_id} #{window_name} #{pane_title} #{pane_start_command} #{@krad}"},
		{"show-options", "-g"},
		{"show-options", "-gw"},
		{"show-options", "-t", "main"},
		{"show-environment", "-g"},
		{"show-environment", "-t", "main"},
	} {
		out, err := exec.Command("tmux", append([]string{"-S", h.socket}, args...)...).CombinedOutput()
		if err != nil {
			h.t.Fatalf("tmux %s: %v: %s", args[0], err, out)
		}
		all.Write(out)
		if args[0] == "list-windows" {
			for _, line := range strings.Split(string(out), "\n") {
				if id, _, ok := strings.Cut(line, " "); ok {
					w, _ := exec.Command("tmux", "-S", h.socket, "show-options", "-w", "-t", id).CombinedOutput()
					all.Write(w)
				}
			}
		}
	}
	return all.String()
}

// tui is a program that starts as TUIs do: it switches its terminal to raw mode, dropping what
// was typed before (TCSAFLUSH), then draws on the alternate screen and reads key by key.
const tui = `import os, sys, termios, time, tty
time.sleep(1)
cooked = termios.tcgetattr(0)
tty.setraw(0, termios.TCSAFLUSH)
os.write(1, b"\x1b[?1049h\x1b[Hready> ")
line = b""
while True:
    c = os.read(0, 1)
    if c in (b"\r", b"\n"):
        break
    line += c
    os.write(1, c)
termios.tcsetattr(0, termios.TCSADRAIN, cooked)
time.sleep(1)
print("\r\ngot <%s>" % line.decode(), flush=True)
time.sleep(600)
`

// TestSpawnPromptIsTyped: a Spawn's prompt reaches the worker as typed input, once the worker shows
// it is ready (or, if it shows nothing, after a few seconds), and only there: while the worker
// runs, no process on this computer has the prompt in its command line or environment (as ps
// shows every user), nor does tmux (window names, options, environments), a file or the app's
// log. A Wait right after the Spawn returns once the worker answered the prompt, not before. Each
// worker takes a second to answer, longer than the quiet spell, so that a Wait that did not wait
// for the prompt would return on the worker idle and unanswered.
//
// Before, the prompt was the command's last argument: ps showed it to everyone, a shell's Spawn
// dropped it, and these programs, which read it, waited for it for ever.
func TestSpawnPromptIsTyped(t *testing.T) {
	t.Parallel()
	began := time.Now().Add(-time.Second) // file times are coarse
	var log apptest.Buffer
	h := start(t, lead(), withLog(&log))
	c := h.as(1)
	for _, tt := range []struct {
		name    string
		command []string // nil for the user's shell
		answer  func(prompt string) string
	}{
		// It shows it is ready: its prompt.
		{"prints first", []string{"sh", "-c", `printf 'ready> '; IFS= read -r line; sleep 1; echo "got <$line>"; exec sleep 600`},
			func(p string) string { return "got <" + p + ">" }},
		// A TUI that starts after a second, drops what was typed before it switched the terminal
		// to raw mode, then draws and reads key by key: the prompt must come once it has drawn.
		{"tui", []string{"python3", "-c", tui}, func(p string) string { return "got <" + p + ">" }},
		// It shows nothing: the prompt is typed after the app's bound.
		{"silent", []string{"python3", "-c", `import time; line = input(); time.sleep(1); print("got <%s>" % line, flush=True); time.sleep(600)`},
			func(p string) string { return "got <" + p + ">" }},
		// The user's shell: its prompt shows it is ready; the prompt is a command line.
		{"shell", nil, func(p string) string { return p + "-answered" }},
	} {
		prompt := newPrompt(t)
		text := prompt
		if tt.command == nil {
			text = "sleep 1; echo " + prompt + "-answe''red"
		}
		w := h.agent(c, api.Spawn, &api.SpawnBody{Title: tt.name, Command: tt.command, Prompt: text})
		if api.Ended(w.State) {
			t.Errorf("%s: Spawn answered %s %s", tt.name, w.State, exitOf(w))
			continue
		}
		spawned := time.Now()
		got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(30)})
		t.Logf("%s: Wait took %v", tt.name, time.Since(spawned).Round(time.Millisecond))
		screen := h.read(c, w.Terminal)
		if got.State != api.StateIdle || !slices.Contains(lines(screen), tt.answer(prompt)) {
			t.Errorf("%s: Wait after the Spawn answered %s before the worker answered its prompt; the screen:\n%s", tt.name, got.State, screen)
		}
		for _, p := range leaktest.Processes(t, prompt) {
			t.Errorf("%s: a process shows the prompt: %s", tt.name, p)
		}
		for _, line := range strings.Split(h.tmuxKnows(), "\n") {
			if strings.Contains(line, prompt) {
				t.Errorf("%s: tmux holds the prompt: %s", tt.name, line)
			}
		}
		// The test's folder is all the files the app and its terminals write to: their HOME,
		// their TMPDIR and tmux's socket. The rest of /tmp is other tests' and other people's.
		for _, f := range leaktest.Files(t, prompt, began, h.dir) {
			t.Errorf("%s: file %s holds the prompt", tt.name, f)
		}
	}
	if strings.Contains(log.String(), "prompt-") {
		t.Errorf("the app's log holds a prompt:\n%s", log.String())
	}
}

// TestSpawnPromptOfAnEndedWorker: a worker that ends before it could be given its prompt is
// answered as it ended, as without a prompt: Spawn answers a command that does not exist as
// failed with 127, and a Wait on a worker that exited at once returns with its exit code, not
// after the few seconds a prompt may wait for its worker to show something.
func TestSpawnPromptOfAnEndedWorker(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	missing := h.agent(c, api.Spawn, &api.SpawnBody{Command: []string{"no-such-command-krad"}, Prompt: newPrompt(t)})
	if missing.State != api.StateFailed || exitOf(missing) != "127" {
		t.Errorf("Spawn of a missing command answered %s %s, want failed 127", missing.State, exitOf(missing))
	}
	ended := h.agent(c, api.Spawn, &api.SpawnBody{Command: []string{"sh", "-c", "exit 3"}, Prompt: newPrompt(t)})
	for _, n := range []int{missing.Terminal, ended.Terminal} {
		got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(n), TimeoutSecs: secs(4)})
		if want := map[int]string{missing.Terminal: "127", ended.Terminal: "3"}[n]; got.State != api.StateFailed || exitOf(got) != want {
			t.Errorf("Wait on main:%d answered %s %s, want failed %s", n, got.State, exitOf(got), want)
		}
	}
}

// TestSendAfterSpawnPrompt: a Send made right after a Spawn, before the worker has shown anything,
// reaches the worker after the Spawn's prompt, not before it.
func TestSendAfterSpawnPrompt(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	prompt := newPrompt(t)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "lines", Prompt: prompt, Command: []string{"sh", "-c",
		`sleep 1; printf 'ready> '; while IFS= read -r line; do echo "got <$line>"; printf 'ready> '; done`}})
	if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "second"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(30)})
	var got []string
	for _, l := range lines(h.read(c, w.Terminal)) {
		if _, answer, ok := strings.Cut(l, "got "); ok {
			got = append(got, answer)
		}
	}
	if want := []string{"<" + prompt + ">", "<second>"}; !slices.Equal(got, want) {
		t.Errorf("the worker got %q, want %q", got, want)
	}
}

// TestPromptWhileTmuxIsDown: a prompt due while the environment is down (its tmux stopped, as a
// hung host's would) is typed once the environment is back; one that cannot be typed because the
// environment stays down is told to subscribers, naming the worker, and the log holds no prompt.
// Each worker shows nothing, so its prompt is due 5 s after its Spawn.
func TestPromptWhileTmuxIsDown(t *testing.T) {
	t.Parallel()
	var log apptest.Buffer
	h := start(t, lead(), withLog(&log), func(c *app.Config) { c.TmuxTimeout = 2 * time.Second })
	c := h.as(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.events(ctx)
	next(t, ch, "the snapshot", func(a api.Answer) bool { return a.Name == "Agents" })
	silent := []string{"python3", "-c", `import time; line = input(); print("got <%s>" % line, flush=True); time.sleep(600)`}

	// Down from just after the Spawn until after the prompt is due.
	prompt := newPrompt(t)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "back", Command: silent, Prompt: prompt})
	spawned := time.Now()
	resume := h.stopTmux()
	next(t, ch, "environment down", appEvent(api.EnvironmentDown))
	time.Sleep(time.Until(spawned.Add(8 * time.Second)))
	resume()
	next(t, ch, "environment up", appEvent(api.EnvironmentUp))
	h.waitScreen(c, w.Terminal, "got <"+prompt+">")

	// Down for good: the prompt is lost, and subscribers are told.
	lost := h.agent(c, api.Spawn, &api.SpawnBody{Title: "lost", Command: silent, Prompt: newPrompt(t)})
	resume = h.stopTmux()
	a := nextWithin(t, ch, 2*time.Minute, "a prompt_not_typed event", appEvent(api.PromptNotTyped))
	var ev api.AppEvent
	_ = a.Decode("AppEvent", &ev)
	if ev.Environment != "main" || !strings.Contains(ev.Message, lost.ID().String()) || strings.Contains(ev.Message, "prompt-") {
		t.Errorf("the event is %+v, want one naming %s and not the prompt", ev, lost.ID())
	}
	resume()
	next(t, ch, "environment up", appEvent(api.EnvironmentUp))
	if got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(lost.Terminal), TimeoutSecs: secs(30)}); got.State != api.StateIdle {
		t.Errorf("Wait on the worker whose prompt was lost answered %s, want idle", got.State)
	}
	if strings.Contains(log.String(), "prompt-") {
		t.Errorf("the app's log holds a prompt:\n%s", log.String())
	}
}
