package ui

import (
	"cmp"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
)

// The app's events, applied to the model: a snapshot, then each change, as app.App.Subscribe
// gives them.

func (m Model) subscribe() tea.Cmd {
	if m.opts.App == nil {
		return nil
	}
	return func() tea.Msg {
		snap, ch := m.opts.App.Subscribe(m.ctx)
		return snapshotMsg{snap: snap, events: ch}
	}
}

// eventBatch is how many queued events one update takes at most.
const eventBatch = 512

// next waits for the next event, and takes the ones already queued with it.
func next(ch <-chan app.Event) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return eventsMsg{closed: true, from: ch}
		}
		msg := eventsMsg{events: []app.Event{ev}, from: ch}
		for len(msg.events) < eventBatch {
			select {
			case ev, ok := <-ch:
				if !ok {
					msg.closed = true
					return msg
				}
				msg.events = append(msg.events, ev)
			default:
				return msg
			}
		}
		return msg
	}
}

func (m *Model) applySnapshot(s app.Snapshot) {
	m.subscribed = true
	m.agents = slices.Clone(s.Agents)
	sortAgents(m.agents)
	// The snapshot names every environment the app has: those removed while the UI fell behind
	// go, those added come with their hosts.
	m.envs = m.envs[:0]
	for _, es := range s.Environments {
		m.envs = append(m.envs, envRow{name: es.Name, ssh: es.SSH, up: es.Up, down: es.Down, connection: es.Connection})
	}
	m.refilter()
}

func sortAgents(as []api.Agent) {
	slices.SortFunc(as, func(a, b api.Agent) int {
		return cmp.Or(strings.Compare(a.Environment, b.Environment), cmp.Compare(a.Terminal, b.Terminal))
	})
}

// env is environment name's row; nil for one the app does not have (an event of its last words
// after it was removed).
func (m *Model) env(name string) *envRow {
	for i := range m.envs {
		if m.envs[i].name == name {
			return &m.envs[i]
		}
	}
	return nil
}

// find is where agent id is in m.agents, or where it would go.
func (m *Model) find(id api.TerminalID) (int, bool) {
	return slices.BinarySearchFunc(m.agents, id, func(a api.Agent, id api.TerminalID) int {
		return cmp.Or(strings.Compare(a.Environment, id.Environment), cmp.Compare(a.Terminal, id.Terminal))
	})
}

// lastLine is the last line of s that holds anything, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n\r\t "), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// apply applies one event; what it returns sends a desktop notice, if the event is one.
func (m *Model) apply(ev app.Event) tea.Cmd {
	if e := ev.App; e != nil {
		switch e.Kind {
		case api.EnvironmentAdded:
			row := envRow{name: e.Environment}
			if st := ev.Environment; st != nil {
				row = envRow{name: st.Name, ssh: st.SSH, up: st.Up, down: st.Down, connection: st.Connection}
			}
			if r := m.env(e.Environment); r != nil {
				*r = row
			} else {
				m.envs = append(m.envs, row)
			}
			m.status = "environment " + e.Environment + " added"
			return nil
		case api.EnvironmentRemoved:
			m.envs = slices.DeleteFunc(m.envs, func(r envRow) bool { return r.name == e.Environment })
			m.status = "environment " + e.Environment + " removed: " + e.Message
			return nil
		case api.VariantsSettled:
			return m.notice("variants settled in "+e.Environment, e.Message)
		}
		if st := ev.Setup; st != nil {
			if st.State == api.SetupDone {
				delete(m.setups, st.Terminal)
			} else {
				m.setups[st.Terminal] = *st
			}
			if last := lastLine(st.Output); st.State == api.SetupFailed && last != "" {
				m.status = st.Terminal.String() + ": group " + st.Group + "'s setup failed: " + last
				return nil
			}
		}
		r := m.env(e.Environment)
		switch {
		case e.Kind != api.EnvironmentUp && e.Kind != api.EnvironmentDown && e.Kind != api.EnvironmentState:
			m.status = e.Environment + ": " + e.Message
		case r == nil: // an environment's last words after its removal
		case e.Kind == api.EnvironmentUp:
			r.up, r.down = true, ""
		case e.Kind == api.EnvironmentDown:
			r.up, r.down = false, e.Message
		default:
			r.connection = e.Message
		}
		return nil
	}
	e := ev.Agent
	id := e.Agent.ID()
	i, ok := m.find(id)
	var notice tea.Cmd
	switch {
	case e.Kind == api.AgentRemoved:
		if ok {
			m.agents = slices.Delete(m.agents, i, i+1)
		}
		delete(m.marked, id)
		delete(m.setups, id)
	case ok:
		was := m.agents[i]
		if marks(was.State, e.Agent.State) {
			m.marked[id] = true
			m.rang = true
		}
		if e.Agent.State == api.StateNeedsInput && (was.State != api.StateNeedsInput || was.Message != e.Agent.Message) {
			notice = m.notice(id.String()+" needs you", cmp.Or(e.Agent.Message, e.Agent.Title))
		}
		m.agents[i] = e.Agent
	default:
		m.agents = slices.Insert(m.agents, i, e.Agent)
	}
	return notice
}

// marks says whether a change of state needs the person: the agent asks for input, failed, or
// went idle after working. It is marked until the person has seen it.
func marks(from, to api.State) bool {
	if from == to {
		return false
	}
	return to == api.StateNeedsInput || to == api.StateFailed || to == api.StateIdle && from == api.StateWorking
}
