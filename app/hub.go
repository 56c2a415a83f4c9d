package app

import (
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/local"
)

// hub fans the app's events out to its subscribers. It is guarded by the App's mutex, so that a
// subscriber's snapshot and the events after it are in order with every change.
type hub struct {
	subs map[*local.Stream]struct{}
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

// publish queues one message for every subscriber; Send never blocks, and a subscriber whose
// buffer is full is dropped by its stream and forgotten here.
func (h *hub) publish(a api.Answer) {
	if len(h.subs) == 0 {
		return
	}
	line, err := local.EncodeLine(a) // once for every subscriber
	if err != nil {
		return
	}
	for s := range h.subs {
		if !s.SendLine(line) {
			delete(h.subs, s)
		}
	}
}

func (h *hub) len() int { return len(h.subs) }
