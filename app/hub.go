package app

import (
	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/local"
)

// hub fans the app's events out to its subscribers: the bus's (SubscribeAgents streams, which get
// each event as a line, as their caller may see it: access.AgentFor) and the process's own
// (Subscribe, which get it as a value, whole). Every event goes to both through publish, so that
// the app's own face sees what the bus sends. It is guarded by the App's mutex, so that a
// subscriber's snapshot and the events after it are in order with every change.
type hub struct {
	subs  map[*local.Stream]api.Caller // each stream's caller
	inner map[chan Event]struct{}
}

// add registers the subscriber of caller from after sending it the snapshot.
func (h *hub) add(s *local.Stream, from api.Caller, snapshot api.Answer) bool {
	if !s.Send(snapshot) {
		return false
	}
	if h.subs == nil {
		h.subs = make(map[*local.Stream]api.Caller)
	}
	h.subs[s] = from
	return true
}

func (h *hub) remove(s *local.Stream) { delete(h.subs, s) }

// addInner registers an in-process subscriber.
func (h *hub) addInner(ch chan Event) {
	if h.inner == nil {
		h.inner = make(map[chan Event]struct{})
	}
	h.inner[ch] = struct{}{}
}

// removeInner forgets an in-process subscriber and closes its channel, if it is still there.
func (h *hub) removeInner(ch chan Event) {
	if _, ok := h.inner[ch]; ok {
		delete(h.inner, ch)
		close(ch)
	}
}

// publish queues one event for every subscriber; it never blocks. A bus subscriber whose buffer
// is full is dropped by its stream and forgotten here; an in-process one has its channel closed,
// which tells it to subscribe again for a fresh snapshot.
func (h *hub) publish(ev Event) {
	// Each caller gets the event as it may see it (access.AgentFor), whose line is made once for
	// all who see it so: an AppEvent's once, an AgentEvent's once for each way its agent is shown.
	lines := map[api.Agent][]byte{}
	for s, from := range h.subs {
		shown, key := ev, api.Agent{}
		if ev.Agent != nil {
			seen := *ev.Agent
			seen.Agent = access.AgentFor(from, seen.Agent)
			shown.Agent, key = &seen, seen.Agent
		}
		line, ok := lines[key]
		if !ok {
			if a, err := shown.answer(); err == nil {
				line, _ = local.EncodeLine(a)
			}
			lines[key] = line
		}
		if line != nil && !s.SendLine(line) {
			delete(h.subs, s)
		}
	}
	for ch := range h.inner {
		select {
		case ch <- ev:
		default:
			h.removeInner(ch)
		}
	}
}

func (h *hub) len() int { return len(h.subs) + len(h.inner) }
