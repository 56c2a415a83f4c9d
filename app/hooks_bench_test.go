package app_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/agenthooks"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// BenchmarkHook: what an agent's hook costs the agent, from the start of its process to its exit,
// as the agent runs it: each op runs `krad-ade-agents hook claude Stop` with Claude Code's JSON on
// stdin, in a terminal of a live app, whose report lands (its round trip included), beside the
// baselines measured in the same run: `true`, and `sh -c :`. via=settings is the command line as
// Claude Code runs it from the settings the app gives it: through sh -c. Run it with
//
//	go test -run '^$' -bench BenchmarkHook -benchtime 500x ./app
func BenchmarkHook(b *testing.B) {
	h := start(b, lead())
	bin := testbin.Dir(b)
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + h.dir, api.VarEndpoint + "=" + h.bus.Addr(),
		api.VarToken + "=" + h.token.Reveal(), api.VarTerminal + "=main:1"}
	js := `{"session_id":"abc123","transcript_path":"/tmp/t.jsonl","cwd":"/src","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"done"}`
	for _, tt := range []struct {
		name string
		argv []string
	}{
		{"via=hook", []string{filepath.Join(bin, "krad-ade-agents"), "hook", "claude", "Stop"}},
		{"via=settings", []string{"/bin/sh", "-c", agenthooks.Command("claude", "Stop")}},
		{"baseline=true", []string{"/bin/true"}},
		{"baseline=sh", []string{"/bin/sh", "-c", ":"}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var lat []time.Duration
			for range b.N {
				cmd := exec.Command(tt.argv[0], tt.argv[1:]...)
				cmd.Env = env
				cmd.Stdin = strings.NewReader(js)
				began := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(began))
			}
			reportPercentiles(b, lat)
		})
	}
	if a := h.agent(h.as(1), api.Check, &api.CheckBody{Target: 1}); a.StateFrom != api.StateFromReported {
		b.Errorf("the hooks' reports did not land: %+v", a)
	}
}

// BenchmarkWaitAfterTurnEnd: how long after an agent's turn ends a lead's Wait on it returns.
// Each op sends the agent a prompt and waits on it, as a lead does (krad send; krad wait), and
// is timed from the moment the agent's turn ended (the fake agent's log, written before its
// hooks run) to the Wait's answer. via=hooks is Claude Code started from a profile with its
// kind, whose Stop hook tells the app; baseline=screen is the same agent from a profile without
// one, which the app takes for idle once it has printed nothing for the quiet spell (2 s, the
// default). Run it with
//
//	go test -run '^$' -bench BenchmarkWaitAfterTurnEnd -benchtime 50x ./app
func BenchmarkWaitAfterTurnEnd(b *testing.B) {
	agents := testbin.FakeAgents(b)
	for _, tt := range []struct{ name, kind string }{{"via=hooks", "claude"}, {"baseline=screen", ""}} {
		b.Run(tt.name, func(b *testing.B) {
			log := filepath.Join(b.TempDir(), "hooks.log")
			h := start(b, lead(), quiet(app.DefaultQuiet), withEnv("FAKEAGENT_LOG="+log),
				withAgents(app.AgentProfile{Name: "a", Command: filepath.Join(agents, "claude"), Kind: tt.kind}))
			c := h.as(1)
			w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "claude", Agent: "a"})
			h.waitScreen(c, w.Terminal, "> ")
			h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(20)})
			var lat []time.Duration
			b.ResetTimer()
			for range b.N {
				sent := time.Now()
				if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "hi"}); err != nil {
					b.Fatal(err)
				}
				a, err := h.call(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(20)})
				answered := time.Now()
				if err != nil || a.Name != api.AnswerAgent {
					b.Fatalf("Wait: %v %s", err, a.Name)
				}
				end := turnEnd(b, log, sent)
				if end.IsZero() || answered.Before(end) {
					b.Fatalf("the Wait answered before the turn ended (turn end %v, answer %v)", end, answered)
				}
				lat = append(lat, answered.Sub(end))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// turnEnd is when the fake agent's first turn after after ended, from its log.
func turnEnd(b *testing.B, log string, after time.Time) time.Time {
	data, _ := os.ReadFile(log)
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "TurnEnd" {
			var ns int64
			for _, c := range f[1] {
				ns = ns*10 + int64(c-'0')
			}
			if t := time.Unix(0, ns); t.After(after) {
				return t
			}
		}
	}
	return time.Time{}
}
