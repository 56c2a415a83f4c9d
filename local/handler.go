package local

import (
	"context"
	"sync"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
)

// Handler is the app behind the bus. The bus asks it once for the facts of a call, decides with
// them, and calls Handle only for requests that passed the order of checks and the access table;
// it never sees Hello, which the bus answers itself.
type Handler interface {
	// Facts resolves the envelope's caller, in one call, to what the access table needs: its
	// role and, when req names a target, what that target is to the caller. A Terminal caller
	// naming a terminal that does not exist is an *api.Error; a Terminal caller that is a
	// session's lead chat is RoleLead. It is called for Client and Git callers too, so the app
	// may refuse them.
	Facts(ctx context.Context, from api.Caller, req api.Request) (Facts, error)
	// Handle answers a request that passed: its answer, or the error that the bus turns into
	// one (an *api.Error as it is, api.ErrTimedOut as "TimedOut", anything else as internal,
	// logged). ctx is cancelled at the request's deadline and when the client leaves, and Handle
	// must return soon after: the bus runs it on the connection's goroutine and answers
	// "TimedOut" once it has returned. For
	// SubscribeAgents, Call.Stream is set and Handle sends on it until ctx is done or the
	// stream is dropped; what it returns then is not written.
	Handle(ctx context.Context, c *Call) (api.Answer, error)
}

// Facts are what the app knows of a call's caller: the inputs of the access table besides the
// request's name.
type Facts struct {
	Role access.Role
	// Target is what the request's target is to the caller; TargetNone when the request names
	// none.
	Target TargetFact
}

// TargetFact is what a request's target is to its caller.
type TargetFact uint8

const (
	// TargetNone: the request names no target, or the caller has no environment (a Client).
	TargetNone TargetFact = iota
	// TargetMissing: no terminal of the caller's environment has the target's number.
	TargetMissing
	// TargetOther: a terminal of the caller's environment that is not one of its workers.
	TargetOther
	// TargetOwnWorker: a worker of the session the caller leads.
	TargetOwnWorker
)

// Call is one request that passed every check.
type Call struct {
	From    api.Caller
	Role    access.Role
	Request api.Request
	// Origin is the way the connection came in: a handler that makes requests of its own for
	// this caller (MCP's relay) makes them through the same one ([Server.Pipe]), so that they
	// pass the same checks.
	Origin access.Origin
	// Stream is set for SubscribeAgents only.
	Stream *Stream
}

// Stream is the sending side of a streaming request. Send never blocks: a subscriber that stops
// reading falls behind by at most the stream's buffer, and is then dropped, so that it slows no
// one else.
type Stream struct {
	ch      chan []byte // encoded lines, newline included
	gone    chan struct{}
	dropped bool
	once    sync.Once
}

func newStream(buffer int) *Stream {
	return &Stream{ch: make(chan []byte, buffer), gone: make(chan struct{})}
}

// Send queues one message for the subscriber. It reports false once the subscriber is gone: it
// left, its buffer filled up, or the bus is shutting down.
func (s *Stream) Send(a api.Answer) bool {
	line, err := EncodeLine(a)
	if err != nil {
		s.drop(false)
		return false
	}
	return s.SendLine(line)
}

// EncodeLine encodes an answer as a stream line, once, for SendLine to many streams.
func EncodeLine(a api.Answer) ([]byte, error) {
	b, err := a.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// SendLine is Send for a line EncodeLine made; the line is shared, never modified.
func (s *Stream) SendLine(line []byte) bool {
	select {
	case <-s.gone:
		return false
	default:
	}
	select {
	case s.ch <- line:
		return true
	default:
		s.drop(true)
		return false
	}
}

// Gone is closed when the subscriber is gone.
func (s *Stream) Gone() <-chan struct{} { return s.gone }

func (s *Stream) drop(full bool) {
	s.once.Do(func() {
		s.dropped = full
		close(s.gone)
	})
}

// Unserved is the Handler of a bus with no app behind it: it knows Client callers and no
// terminal, and answers every request with unavailable.
type Unserved struct{}

// Facts knows Client and Git callers and no terminal.
func (Unserved) Facts(_ context.Context, from api.Caller, _ api.Request) (Facts, error) {
	switch from.Kind {
	case api.CallerClient:
		return Facts{Role: access.RoleClient}, nil
	case api.CallerGit:
		return Facts{Role: access.RoleGit}, nil
	}
	return Facts{}, api.Errorf(api.CodeForbidden, "%s is not a terminal of this app", from.Terminal)
}

// Handle answers unavailable.
func (Unserved) Handle(_ context.Context, c *Call) (api.Answer, error) {
	return api.Answer{}, api.NotServed(string(c.Request.Name), "")
}
