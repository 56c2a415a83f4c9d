package extension

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/version"
)

// Defaults of Config.
const (
	// DefaultIdle is how long an extension runs unused before it is stopped.
	DefaultIdle = 10 * time.Minute
	// terminateAfter is how long a stopping extension has, after its stdin closed, before SIGTERM,
	// and again before SIGKILL.
	terminateAfter = time.Second
	// maxTools bounds a tool list, whatever pages the extension sends.
	maxTools = 1000
)

// AllEnvironments in an extension's Environments lends it to every environment.
const AllEnvironments = "*"

// Spec is one [[extension]] of config.toml.
type Spec struct {
	Name    string
	Command []string
	// Env is added to the app's environment, overriding a variable of the same name.
	Env map[string]string
	// Environments may use it; none means main (this computer) only; AllEnvironments any.
	Environments []string
}

// Lends reports whether env's terminals may use the extension.
func (s Spec) Lends(env string) bool {
	if len(s.Environments) == 0 {
		return env == "main"
	}
	return slices.Contains(s.Environments, env) || slices.Contains(s.Environments, AllEnvironments)
}

// Config is what a Supervisor needs.
type Config struct {
	Extensions []Spec
	// Env is the environment every extension starts with ("K=V"), before its own Env.
	Env []string
	// Idle is how long an extension runs unused before it is stopped; DefaultIdle when zero.
	Idle time.Duration
	// Timeout is how long one request may take, a start included: api's deadline for
	// ExtensionTool when zero. Past it, the request is api.ErrTimedOut. Tests make it short.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Supervisor runs the extensions of a Config.
type Supervisor struct {
	cfg  Config
	log  *slog.Logger
	exts map[string]*ext

	mu     sync.Mutex
	closed bool
}

// New makes a Supervisor; nothing starts before an extension is used.
func New(cfg Config) *Supervisor {
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = api.NewRequest(api.ExtensionTool, &api.ExtensionToolBody{}).Deadline()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Supervisor{cfg: cfg, log: cfg.Logger, exts: map[string]*ext{}}
	for _, spec := range cfg.Extensions {
		s.exts[spec.Name] = &ext{sup: s, spec: spec, starting: make(chan struct{}, 1)}
	}
	return s
}

// Close stops every running extension and waits for them; later requests are unavailable.
func (s *Supervisor) Close() {
	s.mu.Lock()
	s.closed = true
	var running []*session
	for _, x := range s.exts {
		x.mu.Lock()
		if x.sess != nil {
			running = append(running, x.sess)
		}
		x.sess = nil
		x.mu.Unlock()
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, sess := range running {
		wg.Go(func() { sess.stop() })
	}
	wg.Wait()
}

// Handle answers ExtensionTool for a terminal of environment env.
func (s *Supervisor) Handle(ctx context.Context, env string, b *api.ExtensionToolBody) (api.ExtensionAnswer, error) {
	if b.Extension == "" {
		lent := s.lent(env)
		return api.ExtensionAnswer{Extensions: &lent}, nil
	}
	x, err := s.find(env, b.Extension)
	if err != nil {
		return api.ExtensionAnswer{}, err
	}
	tctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var ans api.ExtensionAnswer
	if b.Tool == "" {
		ans, err = x.tools(tctx)
	} else {
		ans, err = x.call(tctx, b.Tool, b.Arguments)
	}
	if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return api.ExtensionAnswer{}, api.ErrTimedOut
	}
	return ans, err
}

// find is the extension name, if env may use it.
func (s *Supervisor) find(env, name string) (*ext, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, api.Errorf(api.CodeUnavailable, "the app is stopping")
	}
	x := s.exts[name]
	if x == nil {
		lent := s.lent(env)
		if len(lent) == 0 {
			return nil, api.Errorf(api.CodeNotFound, "no extension %s: config.toml lends environment %s no extension ([[extension]] tables)", name, env).WithReason(api.ReasonNoExtension)
		}
		return nil, api.Errorf(api.CodeNotFound, "no extension %s: the extensions of environment %s are %s", name, env, strings.Join(lent, ", ")).WithReason(api.ReasonNoExtension)
	}
	if !x.spec.Lends(env) {
		return nil, api.Errorf(api.CodeForbidden, "extension %s is not lent to environment %s: its environments in config.toml, on the computer that runs krad-ade, do not name %s", name, env, env)
	}
	return x, nil
}

// lent are the names of the extensions env may use, in config.toml's order.
func (s *Supervisor) lent(env string) []string {
	names := []string{}
	for _, spec := range s.cfg.Extensions {
		if spec.Lends(env) {
			names = append(names, spec.Name)
		}
	}
	return names
}

// ext is one extension: its spec, and its session while it runs.
type ext struct {
	sup      *Supervisor
	spec     Spec
	starting chan struct{} // a one-slot lock: one start at a time

	mu   sync.Mutex
	sess *session // nil while it does not run
}

// session is one run of an extension's server.
type session struct {
	x      *ext
	cs     *mcp.ClientSession
	stderr *lastLine
	done   chan struct{} // closed when the connection has ended
	pid    int           // the extension's process

	mu    sync.Mutex
	busy  int
	idle  *time.Timer
	tools []*mcp.Tool // the last list, nil until one was fetched
}

// acquire returns the running session, marked busy, starting the extension if it does not run: a
// start, and if that fails one more. fresh says it was started for this request.
func (x *ext) acquire(ctx context.Context) (s *session, fresh bool, err error) {
	if s := x.live(); s != nil {
		return s, false, nil
	}
	select {
	case x.starting <- struct{}{}:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	defer func() { <-x.starting }()
	if s := x.live(); s != nil { // another request started it meanwhile
		return s, false, nil
	}
	var last error
	var stderr string
	for range 2 {
		s, err := x.start(ctx)
		if err == nil {
			return s, true, nil
		}
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		last = err
		var se *startError
		if errors.As(err, &se) {
			stderr = se.stderr
		}
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, errNoCommand) {
			break // starting it again would fail the same way
		}
	}
	return nil, false, x.unavailable(fmt.Sprintf("could not start: %v", last), stderr)
}

// live is the running session, marked busy, or nil.
func (x *ext) live() *session {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.sess
	if s == nil {
		return nil
	}
	select {
	case <-s.done:
		x.sess = nil
		return nil
	default:
	}
	if exited(s.pid) {
		// Gone, though its connection has not said so yet: a call sent now would meet a closed
		// pipe, or an end it could not tell from an answer lost. A new one is started.
		x.sess = nil
		go s.stop()
		return nil
	}
	s.hold()
	return s
}

var errNoCommand = errors.New("its command is empty")

// startError is a start that failed, with what the extension last wrote to stderr.
type startError struct {
	err    error
	stderr string
}

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// start starts the extension and initializes an MCP session with it, within ctx.
func (x *ext) start(ctx context.Context) (*session, error) {
	if len(x.spec.Command) == 0 {
		return nil, errNoCommand
	}
	cmd := exec.Command(x.spec.Command[0], x.spec.Command[1:]...)
	cmd.Env = environ(x.sup.cfg.Env, x.spec.Env)
	stderr := newLastLine()
	cmd.Stderr = stderr
	setProcAttr(cmd)
	client := mcp.NewClient(&mcp.Implementation{Name: "krad-ade", Version: version.Build}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, nil)
	if err != nil {
		return nil, &startError{err: describe(err), stderr: stderr.String()}
	}
	s := &session{x: x, cs: cs, stderr: stderr, done: make(chan struct{}), pid: cmd.Process.Pid, busy: 1}
	// Close may have run while the extension started: it must not outlive the app.
	x.sup.mu.Lock()
	closed := x.sup.closed
	if !closed {
		x.mu.Lock()
		x.sess = s
		x.mu.Unlock()
	}
	x.sup.mu.Unlock()
	if closed {
		_ = cs.Close()
		return nil, api.Errorf(api.CodeUnavailable, "the app is stopping")
	}
	x.sup.log.Info("extension started", "extension", x.spec.Name, "pid", cmd.Process.Pid)
	go func() {
		_ = cs.Wait()
		close(s.done)
		x.mu.Lock()
		if x.sess == s {
			x.sess = nil
			x.sup.log.Warn("extension exited; the next request starts it again", "extension", x.spec.Name)
		}
		x.mu.Unlock()
	}()
	return s, nil
}

// environ is base with extra set, extra's names winning.
func environ(base []string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, over := extra[name]; !over && !strings.HasPrefix(name, api.VarPrefix) {
			out = append(out, kv)
		}
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// hold marks the session busy: it is not stopped for idleness while it is.
func (s *session) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy++
	if s.idle != nil {
		s.idle.Stop()
	}
}

// release ends one use; the last arms the idle timer.
func (s *session) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy--
	if s.busy > 0 {
		return
	}
	if s.idle == nil {
		s.idle = time.AfterFunc(s.x.sup.cfg.Idle, s.idleStop)
		return
	}
	s.idle.Reset(s.x.sup.cfg.Idle)
}

func (s *session) idleStop() {
	s.mu.Lock()
	busy := s.busy
	s.mu.Unlock()
	if busy > 0 {
		return
	}
	s.x.mu.Lock()
	if s.x.sess != s {
		s.x.mu.Unlock()
		return
	}
	s.x.sess = nil
	s.x.mu.Unlock()
	s.x.sup.log.Info("extension stopped: unused", "extension", s.x.spec.Name, "after", s.x.sup.cfg.Idle)
	s.stop()
}

// stop closes the session: the extension's stdin closes, then it gets SIGTERM and SIGKILL if it
// lingers.
func (s *session) stop() {
	_ = s.cs.Close()
	<-s.done
}

// drop stops a session that misbehaved, so that the next request starts the extension again.
func (s *session) drop() {
	s.x.mu.Lock()
	if s.x.sess == s {
		s.x.sess = nil
	}
	s.x.mu.Unlock()
	go s.stop()
}

// unavailable is the error of an extension that cannot serve, with the last line it wrote to
// stderr, escaped and cut.
func (x *ext) unavailable(what, stderr string) *api.Error {
	msg := fmt.Sprintf("extension %s %s", x.spec.Name, what)
	if stderr != "" {
		msg += "; its last stderr line: " + stderr
	} else {
		msg += "; it wrote nothing to stderr"
	}
	return api.Errorf(api.CodeUnavailable, "%s", msg)
}
