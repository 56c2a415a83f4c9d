// Package mcprelay is the app's end of `krad mcp` on SSH hosts. The static krad installed there
// links no MCP server (the MCP SDK would more than double what is copied to every host), so its
// krad mcp relays to one the app runs in its own process, for that terminal, through the bus's
// MCP request (api/mcp.go): the agent's CLI on the host gets the same tools, the same text and
// the same errors as from a krad mcp on this computer.
//
// # What runs
//
// Each session is `krad mcp` itself, package cli's command run in-process with package mcpserve's
// server ([cli.Options.MCP]), its stdin what the host's krad mcp read on its own, its stdout and
// stderr and exit code sent back to be the host's. It calls the bus as the terminal that opened
// the session, and each of its requests reaches the bus the way the host's own do: through the
// Pipe of the origin the MCP request came by, with the bus token, checked in full (the forward's
// Admit, the access table) as if the host had made it.
//
// # Security model
//
// The relay adds no right and no secret. A session is opened by a terminal caller, through a way
// in that may name it (a host's forward names its own environment's terminals only), and is
// bound to that caller and that way in: a request that names the session with another caller or
// from another origin is answered not_found, as for a session that does not exist. Its id, 128
// random bits, is a handle, not a credential: the caller and the origin are what is checked; so
// is the open id a host's krad picks for its opening requests, which finds only a session of the
// same caller by the same way in (another's opens a session of its own). A
// host may hold a bounded number of sessions (per terminal, per environment), each a bounded
// amount of input and output in memory; a session nobody asks about for api.MCPIdle is stopped.
// Nothing relayed is logged: the bytes are an agent's tool calls and their results.
package mcprelay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/cmd/krad/cli"
	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/mcpserve"
)

// Config is what the relay needs of the app: how to reach its bus.
type Config struct {
	// Dial opens a connection to the bus through the way in of origin: the bus's Pipe.
	Dial func(ctx context.Context, origin access.Origin) (net.Conn, error)
	// Endpoint is the bus's address, which the sessions' clients name (they connect through
	// Dial).
	Endpoint string
	// Token is the bus token, which the sessions' requests carry, as the host's do.
	Token api.Token
	// Version is krad's build, which the sessions' servers name; "" is the module's.
	Version string
	// Logger gets a line when a session opens and ends, with its terminal, never what it
	// relays; nil discards.
	Logger *slog.Logger
}

// Limits of the relay.
const (
	// MaxPerTerminal is how many sessions one terminal may hold (one per agent's CLI that runs
	// krad mcp there), and MaxPerEnvironment how many the terminals of one environment may.
	MaxPerTerminal    = 4
	MaxPerEnvironment = 16
	// maxHeldIn is how much input a session holds that its krad mcp has not read yet, and
	// maxHeldOut how much output the host has not said it got: past them the relay takes no
	// more, and the server waits.
	maxHeldIn  = 256 << 10
	maxHeldOut = api.MaxMCPOut
	// doneLinger is how long a session whose krad mcp ended is kept, so that its last answer
	// can be asked for again.
	doneLinger = 10 * time.Second
)

// Relay serves the MCP request.
type Relay struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool
	running  sync.WaitGroup
}

// New makes the relay of cfg.
func New(cfg Config) *Relay {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{cfg: cfg, log: log, sessions: map[string]*session{}}
}

// Handle answers one MCP request of from, which came in by origin: it opens a session or finds
// the caller's own, takes the input it carries, drops the output the host got, and answers with
// the output there is. A request that neither opens a session nor brings input the session takes
// waits for output up to api.MCPPoll. It returns ctx's error when ctx ends first (the host's krad
// cut the request short).
func (r *Relay) Handle(ctx context.Context, from api.Caller, origin access.Origin, b *api.MCPBody) (api.MCPAnswer, error) {
	if from.Kind != api.CallerTerminal {
		return api.MCPAnswer{}, api.Errorf(api.CodeForbidden, "krad mcp is relayed for a terminal, not for %s", from)
	}
	s, err := r.session(from.Terminal, origin, b)
	if err != nil {
		return api.MCPAnswer{}, err
	}
	r.touch(s)
	defer r.touch(s)
	poll := time.NewTimer(api.MCPPoll)
	defer poll.Stop()

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ackLocked(b.Got); err != nil {
		return api.MCPAnswer{}, err
	}
	for {
		took, err := s.takeLocked(b)
		if err != nil {
			return api.MCPAnswer{}, err
		}
		// A request that opens the session learns its id at once.
		if took || b.Session == "" || len(s.out) > 0 || s.done || s.closed {
			return s.answerLocked(), nil
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
			s.mu.Lock()
		case <-poll.C:
			s.mu.Lock()
			return s.answerLocked(), nil
		case <-ctx.Done():
			s.mu.Lock()
			return api.MCPAnswer{}, ctx.Err()
		}
	}
}

// session finds the session b names, which must be the caller's by the same way in, or opens
// one when b names none: unless the caller, by the same way in, opened one with b's open id
// already (the answer was lost), which it finds.
func (r *Relay) session(t api.TerminalID, origin access.Origin, b *api.MCPBody) (*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, api.Errorf(api.CodeUnavailable, "the app is stopping")
	}
	if b.Session != "" {
		s := r.sessions[b.Session]
		if s == nil || s.terminal != t || s.origin != origin {
			return nil, api.Errorf(api.CodeNotFound, "terminal %s has no krad mcp session of that id: it ended, or the app restarted", t)
		}
		return s, nil
	}
	var ofTerminal, ofEnvironment int
	for _, s := range r.sessions {
		if b.Open != "" && s.open == b.Open && s.terminal == t && s.origin == origin {
			return s, nil
		}
		if s.terminal.Environment == t.Environment {
			ofEnvironment++
			if s.terminal == t {
				ofTerminal++
			}
		}
	}
	if ofTerminal >= MaxPerTerminal {
		return nil, api.Errorf(api.CodeConflict, "terminal %s has %d krad mcp sessions, the most it may", t, MaxPerTerminal)
	}
	if ofEnvironment >= MaxPerEnvironment {
		return nil, api.Errorf(api.CodeConflict, "the terminals of environment %s have %d krad mcp sessions, the most they may", t.Environment, MaxPerEnvironment)
	}
	tok, err := api.NewToken()
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &session{id: tok.Reveal(), open: b.Open, terminal: t, origin: origin, stop: stop, changed: make(chan struct{})}
	s.idle = time.AfterFunc(api.MCPIdle, func() { r.end(s, "no request for "+api.MCPIdle.String()) })
	r.sessions[s.id] = s
	r.running.Add(1)
	go func() {
		defer r.running.Done()
		r.run(ctx, s, b.Home)
	}()
	r.log.Info("krad mcp session opened", "terminal", t.String(), "origin", origin.String())
	return s, nil
}

// run runs krad mcp for s until it ends: its input ends, or the session is stopped.
func (r *Relay) run(ctx context.Context, s *session, home string) {
	origin := s.origin
	client := api.Client{
		Endpoint: r.cfg.Endpoint,
		Token:    r.cfg.Token,
		From:     api.FromTerminal(s.terminal),
		Dial:     func(ctx context.Context, _, _ string) (net.Conn, error) { return r.cfg.Dial(ctx, origin) },
	}
	vars := map[string]string{api.VarTerminal: s.terminal.String()}
	if home != "" {
		vars["HOME"] = home
	}
	stderr := capped.First(api.MaxMCPStderr)
	code := cli.Run(ctx, []string{"krad", "mcp"}, cli.MapEnv(vars), stdin{s}, stdout{s}, stderr,
		cli.Options{MCP: mcpserve.Serve, Bus: &client, Version: r.cfg.Version})
	s.mu.Lock()
	s.done, s.exit, s.stderr = true, code, stderr.String()
	s.wakeLocked()
	s.mu.Unlock()
	r.touch(s)
}

// touch restarts s's idle time: api.MCPIdle, or doneLinger once its krad mcp ended.
func (r *Relay) touch(s *session) {
	s.mu.Lock()
	wait := api.MCPIdle
	if s.done {
		wait = doneLinger
	}
	s.mu.Unlock()
	s.idle.Reset(wait)
}

// end stops s and forgets it.
func (r *Relay) end(s *session, why string) {
	r.mu.Lock()
	if r.sessions[s.id] == s {
		delete(r.sessions, s.id)
		r.log.Info("krad mcp session ended", "terminal", s.terminal.String(), "why", why)
	}
	r.mu.Unlock()
	s.idle.Stop()
	s.stop()
	s.mu.Lock()
	s.closed = true
	s.wakeLocked()
	s.mu.Unlock()
}

// Close stops every session and waits for their krad mcp to return; the relay then answers
// unavailable.
func (r *Relay) Close() {
	r.mu.Lock()
	r.closed = true
	var all []*session
	for _, s := range r.sessions {
		all = append(all, s)
	}
	r.mu.Unlock()
	for _, s := range all {
		r.end(s, "the app is stopping")
	}
	r.running.Wait()
}

// session is one krad mcp the relay runs: its input and output, counted in bytes from its start.
type session struct {
	id       string
	open     string // the open id of the requests that opened it, "" for none
	terminal api.TerminalID
	origin   access.Origin
	stop     context.CancelFunc
	idle     *time.Timer

	mu      sync.Mutex
	changed chan struct{} // closed, and made anew, at each change below
	in      []byte        // taken, not read by krad mcp yet
	taken   int64         // bytes of input taken in all
	inEnd   bool          // the input ends after in
	out     []byte        // written by krad mcp from byte outAt, not yet got by the host
	outAt   int64
	done    bool // krad mcp returned: exit, stderr
	exit    int
	stderr  string
	closed  bool // stopped: reads end, writes fail
}

func (s *session) wakeLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitLocked waits for the next change, with s.mu held before and after.
func (s *session) waitLocked() {
	changed := s.changed
	s.mu.Unlock()
	<-changed
	s.mu.Lock()
}

// ackLocked drops the output the host says it got.
func (s *session) ackLocked(got int64) error {
	if got < s.outAt || got > s.outAt+int64(len(s.out)) {
		return api.Errorf(api.CodeBadRequest, "got is %d, but the output the host has not got yet runs from byte %d to %d", got, s.outAt, s.outAt+int64(len(s.out)))
	}
	if drop := got - s.outAt; drop > 0 {
		s.out, s.outAt = s.out[drop:], got
		s.wakeLocked()
	}
	return nil
}

// takeLocked takes what b carries that the session did not take yet, as much as it holds room
// for, and ends the input when b says it ends and all of it is taken. It reports whether it took
// any.
func (s *session) takeLocked(b *api.MCPBody) (bool, error) {
	if b.InAt > s.taken {
		return false, api.Errorf(api.CodeBadRequest, "in_at is %d, past the %d bytes of input taken", b.InAt, s.taken)
	}
	took := false
	if skip := s.taken - b.InAt; skip < int64(len(b.In)) && !s.inEnd {
		rest := b.In[skip:]
		if n := min(len(rest), maxHeldIn-len(s.in)); n > 0 {
			s.in = append(s.in, rest[:n]...)
			s.taken += int64(n)
			took = true
		}
	}
	if b.End && !s.inEnd && b.InAt+int64(len(b.In)) <= s.taken {
		s.inEnd = true
		took = true
	}
	if took {
		s.wakeLocked()
	}
	return took, nil
}

func (s *session) answerLocked() api.MCPAnswer {
	n := min(len(s.out), api.MaxMCPOut)
	a := api.MCPAnswer{Session: s.id, Taken: s.taken, OutAt: s.outAt}
	if n > 0 {
		a.Out = append([]byte(nil), s.out[:n]...)
	}
	if s.done && n == len(s.out) {
		a.Done, a.Exit, a.Stderr = true, s.exit, s.stderr
	}
	return a
}

// stdin is krad mcp's stdin: the input the session took.
type stdin struct{ s *session }

func (r stdin) Read(p []byte) (int, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.in) == 0 && !s.inEnd && !s.closed {
		s.waitLocked()
	}
	if len(s.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.in)
	s.in = s.in[n:]
	s.wakeLocked()
	return n, nil
}

// stdout is krad mcp's stdout: output for the host, held until it says it got it.
type stdout struct{ s *session }

func (w stdout) Write(p []byte) (int, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	written := 0
	for len(p) > 0 {
		for len(s.out) >= maxHeldOut && !s.closed {
			s.waitLocked()
		}
		if s.closed {
			return written, fmt.Errorf("krad mcp's session ended: %w", io.ErrClosedPipe)
		}
		n := min(len(p), maxHeldOut-len(s.out))
		s.out = append(s.out, p[:n]...)
		p, written = p[n:], written+n
		s.wakeLocked()
	}
	return written, nil
}
