package bridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
)

// TestRemoteShellJobIsWorking: on an SSH host too, a command line typed into a shell is working
// until it gives the terminal back to the shell, however long it prints nothing: `echo x; sleep
// 5; echo y` in the user's shell on the host (through krad-ade-agents shell, which names the
// shell in the pane's @krad_shell) is working until y and the prompt show, and idle after, by the
// command tmux names in the pane's foreground (the app sees no process of the host's). The
// quiet spell (500 ms here) would make it idle during the sleep. Each idle the stream tells is
// checked against the screen at that moment.
func TestRemoteShellJobIsWorking(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	lead := w.as(1)
	var shell api.Agent
	w.call(lead, api.Spawn, &api.SpawnBody{Title: "sh"}, &shell)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var s api.Screen
		w.call(lead, api.Read, &api.ReadBody{Target: api.Target(shell.Terminal)}, &s)
		if atPrompt(s.Text) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no prompt in build:%d; the screen:\n%s", shell.Terminal, s.Text)
		}
	}
	timeout := uint32(30)
	var at api.Agent
	w.call(lead, api.Wait, &api.WaitBody{Target: api.Target(shell.Terminal), TimeoutSecs: &timeout}, &at)
	if at.State != api.StateIdle {
		t.Fatalf("the shell at its prompt: %s", at.State)
	}

	// A stream of the test's own, from now: its snapshot, then the changes the Send brings.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan api.Answer, 1024)
	go func() {
		c := &api.Client{Endpoint: w.bus.Addr(), Token: w.token, From: api.FromClient}
		_ = c.Subscribe(ctx, api.NewRequest(api.SubscribeAgents, nil), func(a api.Answer) error { events <- a; return nil })
	}()
	awaitAnswer(t, events, "the snapshot", func(a api.Answer) bool { return a.Name == api.AnswerAgents })
	w.call(lead, api.Send, &api.SendBody{Target: api.Target(shell.Terminal), Text: "echo x; sleep 5; echo y"}, nil)
	began := time.Now()
	worked := false
	for {
		var ev api.AgentEvent
		awaitAnswer(t, events, "the shell idle again", func(a api.Answer) bool {
			return a.Decode("AgentEvent", &ev) == nil && ev.Agent.Environment == "build" && ev.Agent.Terminal == shell.Terminal
		})
		if ev.Agent.State == api.StateWorking {
			worked = true
		}
		if ev.Agent.State != api.StateIdle {
			continue
		}
		var s api.Screen
		w.call(lead, api.Read, &api.ReadBody{Target: api.Target(shell.Terminal)}, &s)
		screen := strings.Split(s.Text, "\n")
		for i, l := range screen {
			if strings.TrimRight(l, " ") == "x" {
				screen = screen[i:]
				break
			}
		}
		if len(screen) < 3 || screen[0] != "x" || strings.TrimRight(screen[1], " ") != "y" || !atPrompt(strings.Join(screen[2:], "\n")) {
			t.Fatalf("idle %v after the Send, before the line ended; the screen:\n%s", time.Since(began).Round(time.Millisecond), s.Text)
		}
		if !worked {
			t.Errorf("idle after the line ended, but never working before")
		}
		t.Logf("idle %v after the Send, once y and the prompt showed (not asserted)", time.Since(began).Round(time.Millisecond))
		return
	}
}

// atPrompt says whether a shell's screen ends with its prompt ("$" or "#", and a space).
func atPrompt(screen string) bool {
	ls := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	last := ls[len(ls)-1]
	return strings.HasSuffix(last, "$") || strings.HasSuffix(last, "#")
}

// awaitAnswer waits up to a minute for the first answer on ch that match accepts.
func awaitAnswer(t *testing.T, ch <-chan api.Answer, what string, match func(api.Answer) bool) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case a := <-ch:
			if match(a) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s within a minute", what)
		}
	}
}
