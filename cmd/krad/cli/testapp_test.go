package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/local"
)

// testApp is the app behind a test bus (a real local.Server): it records every request that
// passes the bus's checks, as its wire JSON, and answers with what its test gave it.
type testApp struct {
	// role is a Terminal caller's role; RoleLead when zero, so that every request passes.
	role access.Role
	// answer answers every request but SubscribeAgents, unless answers has one for the
	// request; Ok when zero.
	answer  api.Answer
	answers map[api.Name]api.Answer
	// first, when set, answers the first request instead.
	first api.Answer
	// stream is what SubscribeAgents sends before the stream ends, unless hold keeps it open
	// until the client leaves.
	stream []api.Answer
	hold   bool
	// hang makes every request wait until the client leaves.
	hang bool

	mu  sync.Mutex
	got []string // "<from> <request JSON>"
	// sent is closed once a stream's messages are queued.
	sent chan struct{}
}

func (h *testApp) Facts(_ context.Context, from api.Caller, _ api.Request) (local.Facts, error) {
	if from.Kind == api.CallerClient {
		return local.Facts{Role: access.RoleClient}, nil
	}
	role := h.role
	if role == 0 {
		role = access.RoleLead
	}
	return local.Facts{Role: role, Target: local.TargetOwnWorker}, nil
}

func (h *testApp) Handle(ctx context.Context, c *local.Call) (api.Answer, error) {
	req, err := json.Marshal(c.Request)
	if err != nil {
		panic(err)
	}
	h.mu.Lock()
	h.got = append(h.got, c.From.String()+" "+string(req))
	first := len(h.got) == 1
	h.mu.Unlock()
	if first && h.first.Name != "" {
		return h.first, nil
	}
	if h.hang {
		<-ctx.Done()
		return api.Answer{}, nil
	}
	if c.Stream != nil {
		for _, a := range h.stream {
			c.Stream.Send(a)
		}
		if h.sent != nil {
			close(h.sent)
		}
		if h.hold {
			<-ctx.Done()
		}
		return api.Answer{}, nil
	}
	if a, ok := h.answers[c.Request.Name]; ok {
		return a, nil
	}
	if h.answer.Name == "" {
		return api.OK, nil
	}
	return h.answer, nil
}

// requests is what the app got, in order.
func (h *testApp) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// startApp starts a bus with h behind it and returns the variables of terminal main:4 of its
// environment, and its token.
func startApp(t *testing.T, h local.Handler) (map[string]string, api.Token) {
	t.Helper()
	endpoint, tok := serve(t, local.Config{PID: 4321, Handler: h})
	return map[string]string{varEndpoint: endpoint, varToken: tok.Reveal(), varTerminal: "main:4"}, tok
}

// answer makes the answer {name: v}.
func answer(t *testing.T, name api.AnswerName, v any) api.Answer {
	t.Helper()
	a, err := api.NewAnswer(name, v)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// agent is an agent of environment main.
func agent(n int, role api.Role, state api.State, title string, exit ...int) api.Agent {
	a := api.Agent{Environment: "main", Terminal: n, Title: title, Role: role, State: state, Session: "s1", StateFrom: api.StateFromScreen}
	if len(exit) > 0 {
		a.ExitCode = &exit[0]
	}
	return a
}

// jsonOf is v's JSON, for wanted output.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runAs runs one command line in-process as prog, with stdin, and returns what it wrote and its
// exit code.
func runAs(t *testing.T, prog string, env map[string]string, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	code = Run(context.Background(), append([]string{prog}, args...), MapEnv(env), stdin, &out, &errOut, Options{})
	return out.String(), errOut.String(), code
}

// notifyWriter is a buffer that tells when something was written to it, safe to read while a
// command writes to it.
type notifyWriter struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{}
}

func newNotifyWriter() *notifyWriter { return &notifyWriter{written: make(chan struct{}, 1)} }

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.written <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
