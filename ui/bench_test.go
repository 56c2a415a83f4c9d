package ui

import (
	"fmt"
	"slices"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
)

// BenchmarkEventToView is one agent event to a redrawn screen (Update, then View's text) with
// 1,000 agents across 20 environments, at 80×24 and 200×60; view-only is the baseline, the same
// screen drawn with no event. p99-ms is the 99th percentile of one event's work.
//
//	go test -run '^$' -bench EventToView -benchtime 2000x ./ui/
func BenchmarkEventToView(b *testing.B) {
	var agents []api.Agent
	envs := []Environment{}
	for e := range 20 {
		envs = append(envs, Environment{Name: fmt.Sprintf("env%02d", e)})
	}
	for i := range 1000 {
		agents = append(agents, api.Agent{Environment: envs[i%20].Name, Terminal: i/20 + 1, Role: api.RoleWorker,
			State: api.StateWorking, Title: fmt.Sprintf("worker %d on the retry backoff", i), Session: "env00:1", Since: t0})
	}
	for _, size := range [][2]int{{80, 24}, {200, 60}} {
		for _, event := range []bool{false, true} {
			name := fmt.Sprintf("%dx%d/view-only", size[0], size[1])
			if event {
				name = fmt.Sprintf("%dx%d/event", size[0], size[1])
			}
			b.Run(name, func(b *testing.B) {
				m := New(b.Context(), Options{Environments: envs})
				next, _ := m.Update(snapshotMsg{snap: app.Snapshot{Agents: agents}})
				next, _ = next.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
				m = next.(Model)
				took := make([]time.Duration, 0, b.N)
				states := []api.State{api.StateIdle, api.StateNeedsInput, api.StateWorking}
				b.ResetTimer()
				for i := range b.N {
					began := time.Now()
					if event {
						a := agents[(i*37)%len(agents)]
						a.State = states[i%len(states)]
						next, _ := m.Update(eventsMsg{events: []app.Event{{Agent: &api.AgentEvent{Kind: api.AgentChanged, Agent: a}}}})
						m = next.(Model)
					}
					_ = m.View()
					took = append(took, time.Since(began))
				}
				b.StopTimer()
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)*99/100])/1e6, "p99-ms")
			})
		}
	}
}
