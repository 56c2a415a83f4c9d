package app

import (
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/local"
)

// hub fans the app's events out to its subscribers: the bus's (SubscribeAgents streams, which get
// each event as a line) and the process's own (Subscribe, which get it as a value). Every event
// goes to both through publish, so that the app's own face sees exactly what the bus sends. It is
// guarded by the App's mutex, so that a subscriber's snapshot and the events after it are in order
// with every change.
type hub struct {
	subs  map[*local.Stream]struct{}
	inner map[chan Event]struct{}
}

// add registers a subscriber after sending it the snapshot.
func (h *hub) add(s *local.Stream, snapshot api.Answer) bool {
	if !s.Send(snapshot) {
		return false
	}
	if h.subs == nil {
		h.subs = make(map[*local.Stream]struct{})
	}
	h.subs[s] = struct{}{}
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
	if len(h.subs) > 0 {
		if a, err := ev.answer(); err == nil {
			if line, err := local.EncodeLine(a); err == nil { // once for every subscriber
				for s := range h.subs {
					if !s.SendLine(line) {
						delete(h.subs, s)
					}
				}
			}
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
