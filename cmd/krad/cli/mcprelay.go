package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/krad-ade/krad/api"
)

// relayMCP is krad mcp in the static krad, which links no MCP server (the SDK would double what
// is copied to every host): it relays its stdin, stdout, stderr and exit code to a krad mcp that
// the app runs for this terminal, as this terminal, through the bus's MCP request (api/mcp.go).
// The app's krad mcp makes each of its requests through the same forward as this one's, so it
// has exactly the rights krad has here.
//
// Every request is one of the spec's: one line, one answer within the 10 seconds. One that
// carries no input waits up to api.MCPPoll for output, and input that arrives meanwhile cuts it
// short; the bytes both ways are counted, so a request whose answer was lost is made again,
// without loss or repeat. The requests that open the session carry one open id, so that one
// made again finds the session the lost one opened. A link that does not answer is tried
// again for api.MCPIdle, which is how long the app keeps a silent session; an answer of the
// app's (an error) ends the relay.
func (x *invocation) relayMCP(b *bus) error {
	open, err := api.NewToken()
	if err != nil {
		return err
	}
	in := newRelayInput()
	go in.pump(x.stdin)
	var (
		session string
		got     int64 // bytes of output written
		heard   = time.Now()
		backoff time.Duration
	)
	for {
		body := in.next(session, got)
		if session == "" {
			body.Open, body.Home = open.Reveal(), hostHome(x.env("HOME"))
		}
		ctx, cancel := context.WithCancel(x.ctx)
		// New input cuts a poll short. Not the request that opens the session: the app answers
		// it at once, and one cut would leave the session it opened running, unknown to krad,
		// until api.MCPIdle (an agent's CLI writes its first request as krad mcp starts).
		if session != "" && len(body.In) == 0 && !body.End {
			go in.cutShort(ctx, cancel)
		}
		a, err := b.call(ctx, api.NewRequest(api.MCP, body))
		cut := err != nil && ctx.Err() != nil && x.ctx.Err() == nil
		cancel()
		switch {
		case x.ctx.Err() != nil:
			x.endMCP(b, session, in, got)
			return nil
		case cut:
			continue
		case err != nil && relayFinal(err):
			return err
		case err != nil:
			if time.Since(heard) > api.MCPIdle {
				return err
			}
			backoff = min(max(2*backoff, 250*time.Millisecond), 5*time.Second)
			select {
			case <-time.After(backoff):
			case <-x.ctx.Done():
			}
			continue
		}
		heard, backoff = time.Now(), 0
		var ans api.MCPAnswer
		if err := a.Decode(api.AnswerMCP, &ans); err != nil {
			return b.unexpected(api.NewRequest(api.MCP, body), err)
		}
		if session == "" {
			session = ans.Session
		}
		if ans.Session != session || ans.OutAt > got || in.taken(ans.Taken) != nil {
			return b.unexpected(api.NewRequest(api.MCP, body), errors.New("the app's counts of the bytes relayed do not agree with krad's"))
		}
		if skip := got - ans.OutAt; skip < int64(len(ans.Out)) {
			n, err := x.stdout.Write(ans.Out[skip:])
			got += int64(n)
			if err != nil {
				x.endMCP(b, session, in, got)
				return fmt.Errorf("krad mcp: write to stdout: %w", err)
			}
		}
		if ans.Done {
			_, _ = io.WriteString(x.stderr, ans.Stderr)
			return &exited{code: ans.Exit}
		}
	}
}

// endMCP tells the app, if it can within a second, that this krad mcp is leaving, so that the one
// it runs stops now rather than after api.MCPIdle.
func (x *invocation) endMCP(b *bus, session string, in *relayInput, got int64) {
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	in.mu.Lock()
	body := &api.MCPBody{Session: session, InAt: in.at, Got: got, End: true}
	in.mu.Unlock()
	_, _ = b.client.Call(ctx, api.NewRequest(api.MCP, body))
}

// relayFinal says whether err, from bus.call, ends the relay: the app answered with an error.
// Anything else is worth another try: "TimedOut", a link that does not answer, no listener at the
// forward's port, or another user's there (to which krad sent nothing), while the app reconnects.
func relayFinal(err error) bool {
	var answered *api.Error
	return errors.As(err, &answered)
}

// hostHome is HOME as the MCP request carries it, for the tools' text: "" when it is not an
// absolute path that the request may carry.
func hostHome(home string) string {
	if !strings.HasPrefix(home, "/") || len(home) > 4096 || strings.ContainsFunc(home, unicode.IsControl) {
		return ""
	}
	return home
}

// relayInput is what krad mcp read on its stdin and the app has not taken yet.
type relayInput struct {
	mu    sync.Mutex
	room  *sync.Cond // signalled when the app took some
	buf   []byte     // from byte at of the input
	at    int64
	ended bool          // stdin ended after buf
	more  chan struct{} // a wake-up (1 buffered) when buf grew or stdin ended
}

// maxHeld is how much input krad mcp reads ahead of what the app took.
const maxHeld = 1 << 20

func newRelayInput() *relayInput {
	in := &relayInput{more: make(chan struct{}, 1)}
	in.room = sync.NewCond(&in.mu)
	return in
}

// pump reads r into the buffer until it ends or fails (either is the input's end).
func (in *relayInput) pump(r io.Reader) {
	p := make([]byte, 32<<10)
	for {
		in.mu.Lock()
		for len(in.buf) >= maxHeld {
			in.room.Wait()
		}
		in.mu.Unlock()
		n, err := r.Read(p)
		in.mu.Lock()
		in.buf = append(in.buf, p[:n]...)
		in.ended = err != nil
		in.mu.Unlock()
		select {
		case in.more <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// next is the next request: the input not known taken, as much as one request carries.
func (in *relayInput) next(session string, got int64) *api.MCPBody {
	select { // the request takes what is there now: a wake-up for it is spent
	case <-in.more:
	default:
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	n := min(len(in.buf), api.MaxMCPIn)
	return &api.MCPBody{Session: session, In: bytes.Clone(in.buf[:n]), InAt: in.at, Got: got, End: in.ended && n == len(in.buf)}
}

// taken drops what the app says it took.
func (in *relayInput) taken(total int64) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	drop := total - in.at
	if drop < 0 || drop > int64(len(in.buf)) {
		return errors.New("the app took input krad did not send")
	}
	if drop > 0 {
		in.buf, in.at = in.buf[drop:], total
		in.room.Broadcast()
	}
	return nil
}

// cutShort calls cancel when new input arrives before ctx ends.
func (in *relayInput) cutShort(ctx context.Context, cancel context.CancelFunc) {
	select {
	case <-in.more:
		cancel()
	case <-ctx.Done():
	}
}
