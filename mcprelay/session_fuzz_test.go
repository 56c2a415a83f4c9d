package mcprelay

import (
	"bytes"
	"errors"
	"testing"

	"github.com/krad-ade/krad/api"
)

// FuzzSessionCounts: whatever a host sends, in any order (input from any byte, the same input
// again, acknowledgements of any count, ends), a session never panics; its krad mcp reads the
// host's input once, whole and in order; it holds at most maxHeldIn of it; an answer's output
// starts where the host's acknowledgement left it; and what it refuses, as bad_request, changes
// nothing.
func FuzzSessionCounts(f *testing.F) {
	f.Add([]byte{0, 10, 1, 5, 2, 7, 3, 4, 0, 0, 1, 200})
	f.Add([]byte{0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 1, 255, 0, 3})
	f.Add([]byte{2, 255, 2, 255, 3, 100, 3, 2, 4, 9, 0, 1})
	// The host's whole input: a stream it sends parts of.
	stream := make([]byte, 1<<20)
	for i := range stream {
		stream[i] = byte(i % 251)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		s := &session{id: "s", changed: make(chan struct{})}
		var read []byte // what krad mcp read of its stdin
		var written int64
		for i := 0; i+1 < len(script); i += 2 {
			op, n := script[i]%5, int64(script[i+1])
			type counts struct {
				taken, outAt  int64
				held, heldOut int
				inEnd         bool
			}
			before := counts{s.taken, s.outAt, len(s.in), len(s.out), s.inEnd}
			var err error
			switch op {
			case 0, 4: // the host sends input from about what was taken, maybe again
				at := max(0, s.taken-n*100+int64(op)*n*50)
				size := min(n*400, api.MaxMCPIn, int64(len(stream))-at)
				if size < 0 {
					continue
				}
				b := &api.MCPBody{Session: "s", In: stream[at : at+size], InAt: at, End: n%17 == 0}
				_, err = s.takeLocked(b)
			case 1: // krad mcp reads
				if len(s.in) == 0 {
					continue
				}
				p := make([]byte, n*300+1)
				k, _ := stdin{s}.Read(p)
				read = append(read, p[:k]...)
			case 2: // krad mcp writes
				room := int64(maxHeldOut - len(s.out))
				k := min(n*5000, room)
				if k > 0 {
					_, _ = stdout{s}.Write(bytes.Repeat([]byte{'o'}, int(k)))
					written += k
				}
			case 3: // the host acknowledges output
				err = s.ackLocked(s.outAt + n*1000 - 2000)
			}
			if err != nil {
				var e *api.Error
				if !errors.As(err, &e) || e.Code != api.CodeBadRequest {
					t.Fatalf("refused with %v, want bad_request", err)
				}
				if (counts{s.taken, s.outAt, len(s.in), len(s.out), s.inEnd}) != before {
					t.Fatalf("a refused body changed the session")
				}
			}
			if len(s.in) > maxHeldIn || len(s.out) > maxHeldOut {
				t.Fatalf("the session holds %d bytes of input and %d of output", len(s.in), len(s.out))
			}
			if s.taken != int64(len(read)+len(s.in)) || !bytes.Equal(read, stream[:len(read)]) {
				t.Fatalf("krad mcp read %d bytes (the stream's own: %v), with %d held, of %d taken", len(read), bytes.Equal(read, stream[:len(read)]), len(s.in), s.taken)
			}
			if s.outAt+int64(len(s.out)) != written {
				t.Fatalf("output: %d acknowledged and %d held, of %d written", s.outAt, len(s.out), written)
			}
			if a := s.answerLocked(); a.OutAt != s.outAt || len(a.Out) > api.MaxMCPOut || a.Taken != s.taken {
				t.Fatalf("answer %+v does not start at byte %d of the output", a, s.outAt)
			}
		}
	})
}
