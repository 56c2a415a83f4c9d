package local

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/hangup"
	"github.com/krad-ade/krad/internal/termsafe"
)

// Config is the bus's configuration. BusToken and LeadToken are required.
type Config struct {
	// BusToken is the token every terminal and api.json get.
	BusToken api.Token
	// LeadToken is kept by the app; a {"Lead":…} caller must carry it.
	LeadToken api.Token
	// Build is the app's build, answered by Hello.
	Build string
	// PID is the app's process id, answered by Hello; 0 leaves it out.
	PID int
	// Handler is the app behind the bus; nil means Unserved.
	Handler Handler
	// Logger receives one line per refused or failed request, without tokens; nil discards.
	Logger *slog.Logger
	// LineTimeout is how long a client has to send its line after connecting: the spec's
	// 10 seconds when zero. Tests shorten it.
	LineTimeout time.Duration
	// StreamBuffer is how many messages a subscriber may fall behind before it is dropped:
	// 1024 when zero.
	StreamBuffer int
	// PendingConns and PendingBytes bound the connections of each path (the listener; Pipe)
	// that have not passed the token check, and the bytes of line they hold between them (see
	// gate.go): DefaultPendingConns and DefaultPendingBytes when zero. Tests lower them.
	PendingConns, PendingBytes int
	// Listener, if set, is the listener to serve, from ListenLoopback: a caller that needs the
	// bus's address before it can make its Handler opens the listener first.
	Listener net.Listener
}

// ListenLoopback opens a TCP listener on 127.0.0.1: on the port of prefer ("127.0.0.1:52144")
// when it is given and free, else on a port the system picks. Nothing but a 127.0.0.1 address is
// ever listened on.
func ListenLoopback(prefer string) (net.Listener, error) {
	if ap, err := netip.ParseAddrPort(prefer); err == nil && ap.Addr() == netip.MustParseAddr("127.0.0.1") && ap.Port() != 0 {
		if ln, err := net.Listen("tcp4", ap.String()); err == nil {
			return ln, nil
		}
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	return ln, nil
}

// DefaultLineTimeout is the spec's time for the request line to arrive after connecting.
const DefaultLineTimeout = 10 * time.Second

// writeTimeout bounds every write to a client, so that a client that does not read cannot hold
// a connection's goroutine forever.
const writeTimeout = 10 * time.Second

// Server is the bus: a listener on 127.0.0.1 that serves one request per connection.
type Server struct {
	cfg   Config
	ln    net.Listener
	hello []byte // the answer line to Hello, made once
	// clientHello is the one request line a Client's Hello is, byte for byte, as api.Client
	// and the spec's printf write it: the bus answers it without decoding it.
	clientHello []byte

	// listened is the way in of the listener's connections, this computer's.
	listened *inlet

	// wg counts the goroutines serving connections. mu orders Pipe's wg.Add before Serve's
	// wg.Wait: serving is Serve's context while it runs, nil once it is waiting for them. It
	// guards inlets too, which Pipe fills as origins first come.
	wg      sync.WaitGroup
	mu      sync.Mutex
	serving context.Context
	inlets  map[access.Origin]*inlet
}

// inlet is one way into the bus: the connections of one Origin. Each has its gate, so that a
// flood of one origin takes nothing from the others, and its own log of what Admit refused.
type inlet struct {
	origin  access.Origin
	gate    *gate
	refused minuteLog
}

// inletLocked is origin's way in, made on its first connection. s.mu is held.
func (s *Server) inletLocked(origin access.Origin) *inlet {
	in := s.inlets[origin]
	if in == nil {
		in = &inlet{origin: origin, gate: newGate(origin, s.cfg.PendingConns, s.cfg.PendingBytes, s.cfg.Logger)}
		s.inlets[origin] = in
	}
	return in
}

// Listen makes the bus on cfg.Listener, or on a new listener on 127.0.0.1 with a port the system
// picks. It never binds any other interface.
func Listen(cfg Config) (*Server, error) {
	if cfg.BusToken.IsZero() || cfg.LeadToken.IsZero() {
		return nil, errors.New("local: the bus and lead tokens are required")
	}
	if cfg.Handler == nil {
		cfg.Handler = Unserved{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LineTimeout <= 0 {
		cfg.LineTimeout = DefaultLineTimeout
	}
	if cfg.StreamBuffer <= 0 {
		cfg.StreamBuffer = 1024
	}
	if cfg.PendingConns <= 0 {
		cfg.PendingConns = DefaultPendingConns
	}
	if cfg.PendingBytes <= 0 {
		cfg.PendingBytes = DefaultPendingBytes
	}
	hello, err := api.NewAnswer("Hello", api.HelloAnswer{APIVersion: api.Version, Build: cfg.Build, PID: cfg.PID})
	if err != nil {
		return nil, err
	}
	line, err := hello.MarshalJSON()
	if err != nil {
		return nil, err
	}
	ln := cfg.Listener
	if ln == nil {
		if ln, err = ListenLoopback(""); err != nil {
			return nil, err
		}
	}
	clientHello, err := json.Marshal(api.Envelope{APIVersion: api.Version, Token: cfg.BusToken, From: api.FromClient, Request: api.NewRequest(api.Hello, nil)})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ln: ln, hello: append(line, '\n'), clientHello: clientHello, inlets: map[access.Origin]*inlet{}}
	s.listened = s.inletLocked(access.Loopback)
	return s, nil
}

// Addr is the endpoint clients dial, like 127.0.0.1:52144.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve accepts connections until ctx is done, then closes the listener and every connection,
// cancels every request under way and waits for their goroutines. Nothing a client does delays
// that (a subscriber that stopped reading, a connection that sends nothing): only a Handler that
// does not return once its ctx is done would. It returns nil after ctx is done.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.serving = ctx
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.serving = nil
		s.mu.Unlock()
		s.wg.Wait()
	}()
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()

	var backoff time.Duration
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Out of file descriptors and the like: wait a little, as net/http does, rather
			// than spin or give up on every other client.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.cfg.Logger.Warn("accept failed", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(ctx, conn, s.listened)
		}()
	}
}

// serveConn serves the one request of a connection that came in through in.
func (s *Server) serveConn(ctx context.Context, conn net.Conn, in *inlet) {
	origin := in.origin
	defer conn.Close()
	// Stopping closes the connection, whatever its client does: one that sends nothing, or stops
	// reading its stream or its answer, cannot hold Serve past its context.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_ = conn.SetReadDeadline(time.Now().Add(s.cfg.LineTimeout))
	// Until its token is checked, the connection is in its origin's gate, which bounds how many
	// such connections there are and what their lines hold.
	w := in.gate.enter(conn)
	defer w.leave()

	line, err := w.readLine()
	if err != nil {
		if ctx.Err() != nil {
			return // stopping
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = api.Errorf(api.CodeBadRequest, "no request line arrived within %s of connecting", s.cfg.LineTimeout)
		}
		s.refuse(w, origin, err)
		return
	}
	// The most common request, a Client's Hello, compared whole and in constant time: equal
	// means every check of the order would pass, so it is answered at once. Any other line,
	// this one with any byte changed included, goes through the checks; so does every line
	// from a forward, where a Client caller is refused.
	if origin == access.Loopback && len(line) == len(s.clientHello) && subtle.ConstantTimeCompare(line, s.clientHello) == 1 {
		w.leave()
		s.write(conn, s.hello)
		return
	}
	call, err := s.check(line, in)
	if err != nil {
		s.refuse(w, origin, err)
		return
	}
	w.leave()
	if call == nil { // Hello: the bus answers it itself, without touching the app.
		s.write(conn, s.hello)
		return
	}
	s.serveCall(ctx, conn, call)
}

// check runs the spec's order of checks on a request line that came in through in. It returns
// the checked call, nil for a Hello the bus answers itself, or the *api.Error to answer.
func (s *Server) check(line []byte, in *inlet) (*Call, error) {
	// 1. The line: a valid envelope, or bad_request.
	env, err := api.DecodeEnvelope(line)
	if err != nil {
		return nil, err
	}
	// 2. The token, in constant time: a Lead caller must carry the lead token, anyone else the
	// bus token.
	if env.From.Kind == api.CallerLead {
		if !env.Token.Equal(s.cfg.LeadToken) {
			return nil, api.Errorf(api.CodeUnauthorized, "only a lead the user named can call as a lead")
		}
	} else if !env.Token.Equal(s.cfg.BusToken) {
		return nil, api.Errorf(api.CodeUnauthorized, "the token is not this app's bus token: it is set anew each time the app starts")
	}
	// 3. The version, before anything else, Hello included.
	if env.APIVersion != api.Version {
		return nil, api.UnsupportedVersion(env.APIVersion)
	}
	// 4. The caller and the request: first whether a connection of this origin may name this
	// caller at all (a host's forward speaks for its own environment only), Hello included.
	if d := access.Admit(in.origin, env.From); d.Verdict != access.Allow {
		// A host that names a caller its forward does not speak for is trying to act beyond
		// its environment (or is misconfigured): a person should learn which one, without a
		// line per attempt.
		if ok, n := in.refused.allow(time.Now()); ok {
			s.cfg.Logger.Warn("a connection named a caller its origin may not speak for: refused",
				"origin", in.origin.String(), "from", env.From.String(), "refused", n)
		}
		return nil, api.Errorf(api.CodeForbidden, "%s", d.Why)
	}
	req, err := env.Request.Decode()
	if err != nil {
		return nil, err
	}
	if req.Name == api.Hello {
		if env.From.Kind == api.CallerGit {
			return nil, api.Errorf(api.CodeForbidden, "%s", access.Decide(access.RoleGit, api.Hello).Why)
		}
		return nil, nil
	}
	return &Call{From: env.From, Request: req, Origin: in.origin}, nil
}

// serveCall resolves the caller, applies the access table, and runs the handler under the
// request's deadline, cancelled when the client leaves.
func (s *Server) serveCall(ctx context.Context, conn net.Conn, call *Call) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Leaving cancels: a client that closes its connection has left, and its request is
	// cancelled. A half-close is not leaving: a client that shut down its writing side after its
	// line (nc -N does) waits for its answer, or its stream, until it closes. Both read as the end
	// of input, which hangup tells apart. What a client sends after its line is dropped.
	_ = conn.SetReadDeadline(time.Time{})
	go func(ctx context.Context) {
		if endOfInput(conn) {
			// At once where hangup cannot tell: the end of input is then taken for a close.
			_ = hangup.Wait(ctx, conn)
		}
		cancel()
	}(ctx)

	if d := call.Request.Deadline(); d > 0 {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithTimeout(ctx, d)
		defer cancelDeadline()
	}

	answer, streamed := s.run(ctx, conn, call)
	if streamed {
		return
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		answer = api.TimedOut
	} else if ctx.Err() != nil {
		return // the client left, or the bus is shutting down
	}
	line, err := answer.MarshalJSON()
	if err != nil {
		s.cfg.Logger.Error("encode answer", "request", call.Request.Name, "err", err)
		line, _ = api.ErrorAnswer(api.Errorf(api.CodeInternal, "the app could not encode its answer")).MarshalJSON()
	}
	s.write(conn, append(line, '\n'))
}

// endOfInput reads and drops what the client sends until its input ends (true), or the
// connection fails or is closed (false).
func endOfInput(conn net.Conn) bool {
	b := make([]byte, 512)
	for {
		if _, err := conn.Read(b); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}

// run answers a call, returning the answer or, for a stream, streamed = true once it is over.
func (s *Server) run(ctx context.Context, conn net.Conn, call *Call) (a api.Answer, streamed bool) {
	if err := s.authorize(ctx, call); err != nil {
		return s.answerError(call, err), false
	}
	if call.Request.Name == api.SubscribeAgents {
		s.stream(ctx, conn, call)
		return api.Answer{}, true
	}
	// On this goroutine: a handler returns once its ctx is done (Serve counts on that too), so
	// the answer at the deadline is "TimedOut" on time, and a request answered at once costs no
	// goroutine of its own.
	a, err := s.cfg.Handler.Handle(ctx, call)
	if err != nil && ctx.Err() != nil {
		// The deadline passed or the client left, and the handler said so: serveCall answers
		// "TimedOut", or nothing. It is no failure of the app's, to log.
		return api.Answer{}, false
	}
	if err != nil {
		return s.answerError(call, err), false
	}
	return a, false
}

// authorize asks the app for the caller's facts, once, and applies the access table to them. It
// returns nil when the call may go ahead.
func (s *Server) authorize(ctx context.Context, call *Call) error {
	f, err := s.cfg.Handler.Facts(ctx, call.From, call.Request)
	if err != nil {
		return err
	}
	if call.From.Kind == api.CallerLead {
		f.Role = access.RoleLead // the lead token was checked: the Lead caller is a lead.
	}
	call.Role = f.Role
	d := access.Decide(f.Role, call.Request.Name)
	switch d.Verdict {
	case access.Allow:
		return nil
	case access.AllowOwnWorker:
		target, ok := call.Request.Target()
		switch {
		case !ok:
			return nil // the body names no terminal yet (PickVariant): its issue decides
		case f.Target == TargetOwnWorker:
			return nil
		case f.Target == TargetMissing:
			return api.NoTerminal(call.From.Terminal.Environment, int(target))
		}
		return api.Errorf(api.CodeForbidden, "%s; %s:%d is not one of them", d.Why, call.From.Terminal.Environment, target)
	}
	return api.Errorf(api.CodeForbidden, "%s", d.Why)
}

// stream writes the stream's messages to the connection, one line each, until the handler
// returns, the client leaves, or the subscriber falls behind and is dropped.
func (s *Server) stream(ctx context.Context, conn net.Conn, call *Call) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := newStream(s.cfg.StreamBuffer)
	call.Stream = st
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		_, _ = s.cfg.Handler.Handle(ctx, call) // a stream's answer is its messages
	}()
	// A subscriber that stops reading blocks the write below once the socket's buffers are full;
	// its stream then fills and is dropped, and closing the connection ends the write; when the
	// bus stops, serveConn closes it. So stream writes need no deadline of their own.
	_ = conn.SetWriteDeadline(time.Time{})
	go func() {
		<-st.gone
		conn.Close()
	}()
	defer func() {
		st.drop(false)
		cancel()
		<-handled
	}()
	for {
		select {
		case line := <-st.ch:
			if !writeLines(conn, st.ch, line) {
				return
			}
		case <-st.gone:
			if st.dropped {
				s.cfg.Logger.Info("subscriber dropped: it fell behind by a full buffer", "from", call.From.String(), "buffer", s.cfg.StreamBuffer)
			}
			return
		case <-handled:
			// Flush what the handler queued before it returned.
			select {
			case line := <-st.ch:
				writeLines(conn, st.ch, line)
			default:
			}
			return
		case <-ctx.Done():
			return
		}
	}
}

// writeLines writes first and whatever else is queued on ch (up to a batch) in one write.
func writeLines(conn net.Conn, ch chan []byte, first []byte) bool {
	bufs := net.Buffers{first}
	for len(bufs) < 64 {
		select {
		case line := <-ch:
			bufs = append(bufs, line)
			continue
		default:
		}
		break
	}
	_, err := bufs.WriteTo(conn)
	return err == nil
}

// refuse answers an error found before the handler and logs it. The log line names the code and
// where the connection came from, never the request's content or token. w is still in its gate.
func (s *Server) refuse(w *waiter, origin access.Origin, err error) {
	conn := w.conn
	a := s.answerError(nil, err)
	var e *api.Error
	if errors.As(err, &e) {
		s.cfg.Logger.Debug("request refused", "code", string(e.Code), "origin", origin.String(), "remote", remoteOf(conn))
	}
	line, _ := a.MarshalJSON()
	if s.write(conn, append(line, '\n')) && !w.dropped.Load() {
		lingerClose(w)
	}
}

// lingerClose lets a refused client read its answer: closing a socket with unread bytes in it
// (the rest of an over-long line) makes the kernel reset the connection, and a reset can discard
// the answer before the client reads it. So the bus shuts its side for writing and drops what
// the client still sends, for a short while and a bounded amount, before it closes. It does so in
// the gate: a flood of refused connections is bounded like one of partial lines.
func lingerClose(w *waiter) {
	if tc, ok := w.conn.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
		w.drain(time.Now().Add(lingerTime), lingerBytes)
	}
}

// How long and how much lingerClose drains.
const (
	lingerTime  = time.Second
	lingerBytes = 1 << 20
)

func (s *Server) write(conn net.Conn, line []byte) bool {
	_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := conn.Write(line)
	return err == nil
}

// answerError is the one place an error becomes an answer: an *api.Error as it is,
// api.ErrTimedOut as "TimedOut", and anything else as internal, logged here since its text is
// not all sent. call is the call that failed, or nil for an error found before the call is known
// (reading the line, the order of checks), whose errors are *api.Error: an internal one there
// would be the bus's own fault, and its answer says no more than that.
func (s *Server) answerError(call *Call, err error) api.Answer {
	if errors.Is(err, api.ErrTimedOut) {
		return api.TimedOut
	}
	var e *api.Error
	if errors.As(err, &e) {
		return api.ErrorAnswer(e)
	}
	if call == nil {
		s.cfg.Logger.Error("request failed before its checks ended", "err", err)
		return api.ErrorAnswer(api.Errorf(api.CodeInternal, "the app failed to answer; see its log"))
	}
	s.cfg.Logger.Error("request failed", "request", string(call.Request.Name), "from", call.From.String(), "err", err)
	return api.ErrorAnswer(api.Errorf(api.CodeInternal, "%s failed: %s", call.Request.Name, termsafe.Shorten(err.Error(), maxInternalMessage)))
}

// maxInternalMessage is how much of an internal error's text an answer carries; the log has it
// all.
const maxInternalMessage = 300

// remoteOf names a connection's far end for the log: a socket pair's has no address.
func remoteOf(conn net.Conn) string {
	if a := conn.RemoteAddr(); a != nil && a.String() != "" {
		return a.String()
	}
	return "pipe"
}
