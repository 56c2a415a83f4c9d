package local

import (
	"context"
	"sync"

	"github.com/krad-ade/krad/api"
)

// Handler is the app behind the bus. The bus calls it only for requests that passed the order of
// checks and the access table; it never sees Hello, which the bus answers itself.
type Handler interface {
	// Role resolves the envelope's caller to a role: a Terminal caller naming a terminal that
	// does not exist is an *api.Error, and a Terminal caller that is a session's lead chat is
	// RoleLead. It is called for Client and Git callers too, so the app may refuse them.
	Role(ctx context.Context, from api.Caller) (Role, error)
	// OwnsWorker reports whether target, a terminal of the lead's environment, is a worker of the
	// session that lead leads. A target that does not exist is an *api.Error with code not_found.
	OwnsWorker(ctx context.Context, lead api.TerminalID, target api.Target) (bool, error)
	// Handle answers a request. ctx is cancelled at the request's deadline and when the client
	// leaves. For SubscribeAgents, Call.Stream is set and Handle sends on it until ctx is done or
	// the stream is dropped; the answer it returns then is not written.
	Handle(ctx context.Context, c *Call) api.Answer
}

// Call is one request that passed every check.
type Call struct {
	From    api.Caller
	Role    Role
	Request api.Request
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

// Role knows Client and Git callers and no terminal.
func (Unserved) Role(_ context.Context, from api.Caller) (Role, error) {
	switch from.Kind {
	case api.CallerClient:
		return RoleClient, nil
	case api.CallerGit:
		return RoleGit, nil
	}
	return 0, api.Errorf(api.CodeForbidden, "%s is not a terminal of this app", from.Terminal)
}

// OwnsWorker knows no worker.
func (Unserved) OwnsWorker(context.Context, api.TerminalID, api.Target) (bool, error) {
	return false, api.Errorf(api.CodeNotFound, "this app has no terminals")
}

// Handle answers unavailable.
func (Unserved) Handle(_ context.Context, c *Call) api.Answer {
	return api.ErrorAnswer(api.NotServed(string(c.Request.Name), ""))
}
