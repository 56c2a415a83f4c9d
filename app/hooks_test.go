package app_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// These tests start the agents' CLIs as a lead does (krad spawn --agent), from profiles with a
// kind, and drive them as a lead does (krad send, krad wait). The CLIs are kradtest/fakeagent:
// each takes its CLI's flags and settings files, and calls the hooks they name with the JSON its
// documentation gives. The hooks are the real krad-ade-agents, reporting over the real bus.

func withAgents(profiles ...app.AgentProfile) option {
	return func(c *app.Config) { c.Agents = profiles }
}

// withEnv adds variables to the environment of the terminals' tmux.
func withEnv(kv ...string) option {
	return func(c *app.Config) { c.Tmux.Env = append(append([]string(nil), c.Tmux.Env...), kv...) }
}

// hookLine is one line of the fake agent's log: a hook it ran, when, and its exit code.
type hookLine struct {
	event      string
	start, end time.Time
	code       string
}

func hookLog(t *testing.T, path string) []hookLine {
	t.Helper()
	b, _ := os.ReadFile(path)
	var out []hookLine
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		s, _ := strconv.ParseInt(f[1], 10, 64)
		e, _ := strconv.ParseInt(f[2], 10, 64)
		out = append(out, hookLine{f[0], time.Unix(0, s), time.Unix(0, e), strings.Join(f[3:], " ")})
	}
	return out
}

// waitHook waits up to 10 s for the log to have a line of event started after after (the agent
// writes it once the hook has exited, which can be after its report arrived) and returns the
// first: the person's own hooks of the event may follow the app's.
func waitHook(t *testing.T, path, event string, after time.Time) (hookLine, bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, l := range hookLog(t, path) {
			if l.event == event && l.start.After(after) {
				return l, true
			}
		}
		if time.Now().After(deadline) {
			return hookLine{}, false
		}
	}
}

// atPrompt says whether a shell's screen ends with its prompt ("$ ", or "# " for root).
func atPrompt(screen string) bool {
	ls := lines(strings.TrimRight(screen, "\n "))
	last := ls[len(ls)-1]
	return strings.HasSuffix(last, "$") || strings.HasSuffix(last, "#")
}

// personsSettings writes, in home, what a person has in each agent's own settings: a hook (or
// notify program) of theirs, which touches a marker file; it returns each file and its bytes.
func personsSettings(t *testing.T, home, marker string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{
		filepath.Join(home, ".claude", "settings.json"): []byte(`{
  "model": "opus",
  "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo claude >> ` + marker + `"}]}]}
}
`),
		filepath.Join(home, ".gemini", "settings.json"): []byte(`{"hooks":{"AfterAgent":[{"hooks":[{"type":"command","command":"echo gemini >> ` + marker + `"}]}]}}
`),
		filepath.Join(home, ".codex", "config.toml"): []byte(`model = "o3"
# my own notifier
notify = ["sh", "-c", "echo codex >> ` + marker + `", "sh"]
`),
	}
	for path, b := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// TestAgentsTellTheirState: an agent started from a profile with a kind tells its own state
// through its CLI's hooks. Claude Code and Gemini CLI: idle once ready, working while a silent
// tool runs (the screen would say idle after the quiet spell), needs_input with their message
// when they ask for a permission, idle at their turn's end, which a Wait returns on; the state
// says it came from the agent. Codex: each turn's end, from its notify program, with the quiet
// spell an hour: no Wait would return without it. The person's own settings files are the same
// byte for byte afterwards, and the hooks and notify program they name still ran. No hook
// printed on the agent's screen.
func TestAgentsTellTheirState(t *testing.T) {
	agents := testbin.FakeAgents(t)
	for _, kind := range []string{"claude", "gemini", "codex"} {
		t.Run(kind, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "hooks.log")
			spell := 200 * time.Millisecond
			if kind == "codex" {
				spell = time.Hour
			}
			h := start(t, lead(), quiet(spell), withEnv("FAKEAGENT_LOG="+log),
				withAgents(app.AgentProfile{Name: "a", Command: filepath.Join(agents, kind), Kind: kind}))
			marker := filepath.Join(h.dir, "persons-hooks-ran")
			files := personsSettings(t, h.dir, marker)
			c := h.as(1)
			w := h.agent(c, api.Spawn, &api.SpawnBody{Title: kind, Agent: "a"})
			h.waitScreen(c, w.Terminal, "> ")

			if kind != "codex" {
				// Ready: its session's start says so.
				a := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(20)})
				if a.State != api.StateIdle || a.StateFrom != api.StateFromReported {
					t.Fatalf("once it started: %s from %s, want idle from reported", a.State, a.StateFrom)
				}
			}

			// A silent tool: working, as the agent says, until its turn ends.
			sent := time.Now()
			a, took, screen, err := h.sendAndWait(w.Terminal, "work 2", 20)
			returned := sent.Add(took) // at least: the Send itself came first
			if err != nil {
				t.Fatalf("%v\nthe hooks the agent ran: %+v", err, hookLog(t, log))
			}
			stop, ok := waitHook(t, log, map[string]string{"claude": "Stop", "gemini": "AfterAgent", "codex": "notify"}[kind], sent)
			switch {
			case a.State != api.StateIdle || a.StateFrom != api.StateFromReported:
				t.Errorf("after the turn: %s from %s, want idle from reported", a.State, a.StateFrom)
			case !strings.Contains(screen, "done 2"):
				t.Errorf("the Wait returned before the turn ended (after %v); the screen:\n%s", took.Round(time.Millisecond), screen)
			case !ok:
				t.Errorf("the agent ran no hook at its turn's end: %+v", hookLog(t, log))
			default:
				t.Logf("the Wait returned %v after the agent's turn-end hook started (not asserted)", returned.Sub(stop.start).Round(time.Millisecond))
			}
			if kind == "codex" {
				// Its TUI redraws at rest once the notify program has told the app: a redraw, not
				// work. The screen that shows it is read through the app's tmux client, after the
				// redraw's output on that client.
				h.waitScreen(c, w.Terminal, "turn complete")
				if a := h.agent(c, api.Check, &api.CheckBody{Target: api.Target(w.Terminal)}); a.State != api.StateIdle || a.StateFrom != api.StateFromReported {
					t.Errorf("after its redraw at rest: %s from %s, want idle from reported", a.State, a.StateFrom)
				}
			}

			if kind != "codex" {
				// A permission: needs_input, with the agent's message, in the list too.
				a, _, _, err = h.sendAndWait(w.Terminal, "ask", 20)
				want := map[string]string{"claude": "Claude needs your permission to use Bash", "gemini": "Gemini CLI asks to run: run_shell_command"}[kind]
				if err != nil || a.State != api.StateNeedsInput || a.Message != want || a.StateFrom != api.StateFromReported {
					t.Fatalf("after ask: %+v, %v; want needs_input, %q", a, err, want)
				}
				var listed api.Agent
				for _, l := range h.agents(c) {
					if l.Terminal == w.Terminal {
						listed = l
					}
				}
				if listed.State != api.StateNeedsInput || listed.Message != want || listed.StateFrom != api.StateFromReported {
					t.Errorf("ListAll shows %+v", listed)
				}
				if a, _, screen, err = h.sendAndWait(w.Terminal, "y", 20); err != nil || a.State != api.StateIdle || a.Message != "" || !strings.Contains(screen, "ran it") {
					t.Errorf("after y: %+v, %v; the screen:\n%s", a, err, screen)
				}
			}

			// The person's own hooks ran beside the app's, and their files are as they were.
			h.waitFile(marker, kind)
			for path, was := range files {
				if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, was) {
					t.Errorf("%s changed: %q, %v", path, now, err)
				}
			}
			if strings.Contains(h.read(c, w.Terminal), "HOOK OUTPUT") {
				t.Errorf("a hook printed on the agent's screen:\n%s", h.read(c, w.Terminal))
			}
			for _, l := range hookLog(t, log) {
				if l.event != "notify" && l.code != "0" {
					t.Errorf("hook %s exited %s", l.event, l.code)
				}
			}
		})
	}
}

// waitFile waits until the file at path holds want.
func (h *harness) waitFile(path, want string) {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	h.t.Fatalf("%s never held %q: %q", path, want, b)
}

// TestShellJobIsWorking: a command line typed into a shell is working until it gives the
// terminal back to the shell, however long it prints nothing: `echo x; sleep 5; echo y` is
// working until y and the prompt show, and idle after. Each state it goes to is checked against
// the screen at that moment: before, the quiet spell made it idle during the sleep. On this
// computer the app sees the job's process group (of the user's shell, or of a shell a worker runs
// as its command); on another host (a second tmux server the app drives as it drives a host's),
// the command tmux names in the foreground.
//
// The quiet spell is the app's own (2 s), twice within the sleep. Between two commands of the
// line the shell itself holds its terminal, and a shell that gets no CPU there for a whole
// spell is idle to the app: with a spell of 300 ms, a loaded machine made it so (run 29).
func TestShellJobIsWorking(t *testing.T) {
	for _, where := range []string{"main", "run", "host"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			h := start(t, lead(), quiet(app.DefaultQuiet))
			env := "main"
			c := h.as(1)
			if where == "host" {
				if err := h.app.AddEnvironment(app.Remote{Name: "box", Host: h.extraHost("", "")}, []app.TerminalSpec{{Title: "lead", Lead: true, Environment: "box"}}); err != nil {
					t.Fatal(err)
				}
				env = "box"
				<-h.app.ReadyOf("box")
				c = &api.Client{Endpoint: h.bus.Addr(), Token: h.token, From: api.FromTerminal(api.TerminalID{Environment: "box", Terminal: 1})}
			}
			// The user's shell; or a shell run as a worker's command (through krad-ade-agents
			// run), which takes a process group of its own, and is no job of run's.
			spawn := &api.SpawnBody{Title: "sh"}
			if where == "run" {
				spawn.Command = []string{"sh", "-i"}
			}
			shell := h.agent(c, api.Spawn, spawn).Terminal
			for deadline := time.Now().Add(15 * time.Second); !atPrompt(h.read(c, shell)); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no prompt; the screen:\n%s", h.read(c, shell))
				}
			}
			if a := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(shell), TimeoutSecs: secs(20)}); a.State != api.StateIdle {
				t.Fatalf("the shell at its prompt: %s", a.State)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			events := h.events(ctx)
			next(t, events, "the snapshot", func(a api.Answer) bool { return a.Name == api.AnswerAgents })
			if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(shell), Text: "echo x; sleep 5; echo y"}); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			for {
				ev := nextWithin(t, events, 30*time.Second, "the shell idle again", func(a api.Answer) bool {
					var ev api.AgentEvent
					return a.Decode("AgentEvent", &ev) == nil && ev.Agent.Environment == env && ev.Agent.Terminal == shell
				})
				var e api.AgentEvent
				_ = ev.Decode("AgentEvent", &e)
				if e.Agent.State != api.StateIdle {
					continue
				}
				screen := lines(h.read(c, shell))
				for i, l := range screen {
					if l == "x" {
						screen = screen[i:]
						break
					}
				}
				if len(screen) < 3 || screen[0] != "x" || screen[1] != "y" || !atPrompt(strings.Join(screen[2:], "\n")) {
					t.Fatalf("idle %v after the Send, before the line ended; the screen:\n%s", time.Since(began).Round(time.Millisecond), strings.Join(screen, "\n"))
				}
				t.Logf("idle %v after the Send, once y and the prompt showed", time.Since(began).Round(time.Millisecond))
				return
			}
		})
	}
}

// TestVariantsSettledIsTold: once every worker of a variant set has settled after its task, as a
// Wait on each would return, subscribers are told in one AppEvent that names the set and each
// worker's state: what the UI tells the person. A worker that fails counts as settled.
func TestVariantsSettledIsTold(t *testing.T) {
	_, _, withRepo := withRepo(t)
	h := start(t, lead(), withRepo)
	c := h.as(1)
	events := subscribe(t, h)
	run := &api.RunVariantsBody{Title: "both", Prompt: "go", Agents: []api.VariantAgent{
		{Command: []string{"sh", "-c", "read task; echo done $task; read more"}, Count: 1},
		{Command: []string{"sh", "-c", "read task; exit 3"}, Count: 1},
	}}
	var v api.Variants
	if err := h.decode(c, api.RunVariants, run, api.AnswerVariants, &v); err != nil || len(v.Variants) != 2 {
		t.Fatalf("RunVariants: %+v, %v", v, err)
	}
	ev := events.wait(t, api.VariantsSettled)
	want := fmt.Sprintf("set both: its 2 variants settled (main:%d idle, main:%d failed)", v.Variants[0].Agent.Terminal, v.Variants[1].Agent.Terminal)
	if ev.Message != want || ev.Environment != "main" {
		t.Errorf("the AppEvent says %q in %q, want %q", ev.Message, ev.Environment, want)
	}
	if screen := h.read(c, v.Variants[0].Agent.Terminal); !strings.Contains(screen, "done go") {
		t.Errorf("told before the first variant answered its task; its screen:\n%s", screen)
	}
}
