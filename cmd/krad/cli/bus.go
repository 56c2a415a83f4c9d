package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/tokenfile"
)

// The variables the app sets in its terminals.
const (
	varEndpoint  = "KRAD_ADE_ENDPOINT"
	varToken     = "KRAD_ADE_TOKEN"
	varTokenFile = "KRAD_ADE_TOKEN_FILE"
	varTerminal  = "KRAD_ADE_TERMINAL"
)

// bus is the agents bus krad talks to, and how krad found it.
type bus struct {
	client api.Client
	// tokenFrom is the variable the token came from, when found through the variables.
	tokenFrom string
	// file is the api.json krad read, and filePID the pid it names; "" and 0 when krad found
	// the bus through the variables.
	file    string
	filePID int
	// home abbreviates file to ~/… for people.
	home string
}

// foundThrough says how krad found the bus, for people: the variable, or api.json's path.
func (b *bus) foundThrough() string {
	if b.file == "" {
		return varEndpoint
	}
	return abbreviate(b.file, b.home)
}

// findBus finds the bus: through the variables when KRAD_ADE_ENDPOINT or KRAD_ADE_TERMINAL is
// set, else through discover (api.json), else not at all. Its errors carry their kind and hint.
func findBus(env Env, discover func(func(string) string) (Discovered, error)) (*bus, error) {
	if env(varEndpoint) != "" || env(varTerminal) != "" {
		return fromVariables(env)
	}
	if discover == nil {
		return nil, &problem{
			err:  errors.New("KRAD_ADE_ENDPOINT is not set, and this krad finds the agents API only through the KRAD_ADE_* variables"),
			kind: errNoAPI,
			hint: "run krad in one of krad-ade's terminals, where the app sets KRAD_ADE_ENDPOINT, KRAD_ADE_TOKEN_FILE and KRAD_ADE_TERMINAL",
		}
	}
	d, err := discover(env)
	home := env("HOME")
	where := "api.json"
	if d.Path != "" {
		where = abbreviate(d.Path, home)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &problem{
			err:  fmt.Errorf("no agents API found: KRAD_ADE_ENDPOINT is not set, and there is no %s", where),
			kind: errNoAPI,
			hint: `start krad-ade (with Settings › General › "Let other programs find the agents API" on), or set KRAD_ADE_ENDPOINT`,
		}
	case err != nil && d.Path == "":
		return nil, &problem{err: fmt.Errorf("find api.json: %w", err), kind: errNoAPI, hint: "set KRAD_ADE_ENDPOINT"}
	case err != nil:
		return nil, &problem{err: fmt.Errorf("read %s: %w", where, err), kind: errNoAPI, hint: staleHint}
	case api.CheckEndpoint(d.Endpoint) != nil:
		return nil, &problem{err: fmt.Errorf("%s names no loopback endpoint", where), kind: errNoAPI, hint: staleHint}
	case d.Token.IsZero():
		return nil, &problem{err: fmt.Errorf("%s holds no token", where), kind: errNoToken, hint: staleHint}
	}
	return &bus{
		client:  api.Client{Endpoint: d.Endpoint, Token: d.Token, From: api.FromClient},
		file:    d.Path,
		filePID: d.PID,
		home:    home,
	}, nil
}

// staleHint is the next step when api.json is stale or unusable.
const staleHint = "start krad-ade; the next start replaces the file"

// fromVariables finds the bus through the KRAD_ADE_* variables alone.
func fromVariables(env Env) (*bus, error) {
	b := &bus{client: api.Client{Endpoint: env(varEndpoint), From: api.FromClient}, home: env("HOME")}
	if b.client.Endpoint == "" {
		return nil, &problem{
			err:  errors.New("KRAD_ADE_TERMINAL is set, but KRAD_ADE_ENDPOINT is not"),
			kind: errNoAPI,
			hint: "krad-ade sets both in its terminals: open a new one, or unset KRAD_ADE_TERMINAL to use api.json",
		}
	}
	if err := api.CheckEndpoint(b.client.Endpoint); err != nil {
		return nil, &problem{
			err:  fmt.Errorf("KRAD_ADE_ENDPOINT=%s: %w", quote(b.client.Endpoint), err),
			kind: errNoAPI,
			hint: "KRAD_ADE_ENDPOINT is the bus's loopback address, like 127.0.0.1:52144",
		}
	}

	switch s, path := env(varToken), env(varTokenFile); {
	case s != "":
		tok, err := api.ParseToken(s)
		if err != nil {
			return nil, &problem{
				err:  fmt.Errorf("KRAD_ADE_TOKEN is not a token: %w", err),
				kind: errNoToken,
				hint: "krad-ade sets it in its terminals: open a new one",
			}
		}
		b.client.Token, b.tokenFrom = tok, varToken
	case path != "":
		tok, err := tokenfile.Read(path)
		if err != nil {
			hint := "krad-ade writes this file itself, owner-only: if something else changed it, the token may have leaked; restart krad-ade for a new one"
			if errors.Is(err, fs.ErrNotExist) {
				hint = "krad-ade writes the file when it connects to this host: start krad-ade, or wait for it to reconnect"
			}
			return nil, &problem{err: fmt.Errorf("KRAD_ADE_TOKEN_FILE: %w", err), kind: errNoToken, hint: hint}
		}
		b.client.Token, b.tokenFrom = tok, varTokenFile
	default:
		return nil, &problem{
			err:  errors.New("KRAD_ADE_ENDPOINT is set, but neither KRAD_ADE_TOKEN nor KRAD_ADE_TOKEN_FILE is"),
			kind: errNoToken,
			hint: "krad-ade sets them together in its terminals: run krad in one of them",
		}
	}

	if s := env(varTerminal); s != "" {
		id, err := api.ParseTerminalID(s)
		if err != nil {
			return nil, &problem{
				err:  fmt.Errorf("KRAD_ADE_TERMINAL=%s: %w", quote(s), err),
				hint: "krad-ade sets it in its terminals; unset it elsewhere",
			}
		}
		b.client.From = api.FromTerminal(id)
	}
	return b, nil
}

// helloWait is how long krad waits for Hello's answer.
const helloWait = 5 * time.Second

// answerWait is how long krad waits for an answer: a little past the app's own deadline, after
// which the app answers "TimedOut" itself.
func answerWait(req api.Request) time.Duration {
	if req.Name == api.Hello {
		return helloWait
	}
	return req.Deadline() + 2*time.Second
}

// call makes one request. Its errors are ready for a person, with a hint: the app's own answers
// (an *api.Error, api.ErrTimedOut), or why no answer came (nothing answers, or what answers is not
// the bus).
func (b *bus) call(ctx context.Context, req api.Request) (api.Answer, error) {
	wait := answerWait(req)
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	a, err := b.client.Call(cctx, req)
	switch e := err.(type) {
	case nil:
		return a, nil
	case *api.Error: // Call returns the app's error answers as they are, unwrapped
		return a, &problem{err: fmt.Errorf("%s: the app answered %w", req.Name, e), hint: b.hintFor(e.Code)}
	}
	switch {
	case ctx.Err() != nil:
		return a, fmt.Errorf("%s: %w", req.Name, ctx.Err())
	case errors.Is(err, api.ErrTimedOut):
		return a, &problem{err: fmt.Errorf("%s: %w", req.Name, err), hint: "the app gave up at its deadline for this request; try again"}
	case errors.Is(err, context.DeadlineExceeded) && req.Name == api.Hello:
		// The bus answers Hello itself, at once: a peer that keeps quiet is not the bus.
		return a, b.unreachable(&api.UnreachableError{Endpoint: b.client.Endpoint, Err: fmt.Errorf("no answer within %s", wait)}, true)
	case errors.Is(err, context.DeadlineExceeded):
		return a, &problem{
			err:  fmt.Errorf("%s: no answer from the app at %s within %s, past its own deadline", req.Name, b.client.Endpoint, wait),
			hint: "the app may be stuck: check that krad-ade responds, and try again",
		}
	}
	var u *api.UnreachableError
	if errors.As(err, &u) {
		return a, b.unreachable(u, false)
	}
	// The connection opened but the answer could not be read: whatever listens there is not the
	// bus. (An *api.Error inside is about this read, not an answer of the app's.)
	var e *api.Error
	if errors.As(err, &e) {
		err = errors.New(e.Message)
	}
	return a, b.unreachable(&api.UnreachableError{Endpoint: b.client.Endpoint, Err: err}, true)
}

// unreachable explains that no bus answered. Through api.json that makes the file stale;
// otherwise is true when something answered that is not the bus.
func (b *bus) unreachable(u *api.UnreachableError, otherwise bool) error {
	if b.file == "" {
		return &problem{err: u, hint: "start krad-ade, or set KRAD_ADE_ENDPOINT"}
	}
	what := "nothing answers"
	if otherwise {
		what = "something that is not the agents bus answers"
	}
	return &problem{
		err:  fmt.Errorf("api.json at %s is stale: %s at %s", b.foundThrough(), what, b.client.Endpoint),
		kind: errNoAPI,
		hint: staleHint,
	}
}

// hello says Hello. When krad found the bus through api.json it also checks that the file is
// live: the answer's pid must be the one the file names.
func (b *bus) hello(ctx context.Context) (api.HelloAnswer, error) {
	var h api.HelloAnswer
	a, err := b.call(ctx, api.NewRequest(api.Hello, nil))
	if err != nil {
		return h, err
	}
	if err := a.Decode("Hello", &h); err != nil {
		return h, b.unreachable(&api.UnreachableError{Endpoint: b.client.Endpoint, Err: err}, true)
	}
	if b.file != "" && b.filePID != 0 && h.PID != 0 && h.PID != b.filePID {
		return h, &problem{
			err:  fmt.Errorf("api.json at %s is stale: another process (pid %d) answers at %s", b.foundThrough(), h.PID, b.client.Endpoint),
			kind: errNoAPI,
			hint: staleHint,
		}
	}
	return h, nil
}

// hintFor is the next step after the app answered an error with code.
func (b *bus) hintFor(code api.ErrorCode) string {
	switch code {
	case api.CodeUnauthorized:
		switch {
		case b.file != "":
			return fmt.Sprintf("the app that answers does not know the token in %s, which is from an earlier run: %s", b.foundThrough(), staleHint)
		case b.tokenFrom == varTokenFile:
			return "the token in KRAD_ADE_TOKEN_FILE is from an earlier run of krad-ade: the app rewrites the file when it reconnects to this host; if it stays wrong, restart the terminal"
		default:
			return "KRAD_ADE_TOKEN is from an earlier run of krad-ade: restart the terminal to get the current one"
		}
	case api.CodeForbidden:
		if b.client.From.Kind == api.CallerClient {
			return "outside krad-ade's terminals, krad may only list and watch agents: run this in one of them"
		}
		return "only a session's lead may direct its workers"
	case api.CodeUnsupportedAPIVersion:
		return fmt.Sprintf("this krad speaks the agents API v%d: use the krad that came with this krad-ade (first on PATH in its terminals)", api.Version)
	case api.CodeBadRequest:
		return "this krad and the app disagree about the request: use the krad that came with this krad-ade"
	case api.CodeUnavailable, api.CodeInternal:
		return "try again in a moment"
	}
	return ""
}
