package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/tokenfile"
)

// The variables the app sets in its terminals, as package api names them.
const (
	varEndpoint  = api.VarEndpoint
	varToken     = api.VarToken
	varTokenFile = api.VarTokenFile
	varTerminal  = api.VarTerminal
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

// onHost says whether krad calls from a terminal of an SSH environment, through its forward: the
// app's own environment, on its computer, is always main.
func (b *bus) onHost() bool {
	return b.client.From.Kind == api.CallerTerminal && b.client.From.Terminal.Environment != localEnvironment
}

// localEnvironment is the name of the environment of the computer that runs krad-ade (app.Local).
const localEnvironment = "main"

// linkSilent is the error for a request that got no answer through the forward. There the
// silence is the SSH link's as likely as the app's: the connection reached the forward's
// listener on this host, whoever was to answer behind it. It counts as no live API (exit code 2).
func (b *bus) linkSilent(name api.Name, wait time.Duration) error {
	return &problem{
		err: fmt.Errorf("%s: no answer within %s through the forward at %s: the SSH link from this host to the computer that runs krad-ade is not answering, or the app is not",
			name, wait, b.client.Endpoint),
		kind: errNoAPI,
		hint: "the app notices a link that stops answering within its keepalives (45 s by default: ServerAliveInterval 15 s × ServerAliveCountMax 3) and connects again; try again then, or see krad-ade's log on that computer",
	}
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
			hint: "start krad-ade (it writes api.json unless the config.toml beside it says discovery = false), or set KRAD_ADE_ENDPOINT",
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
	b := &bus{
		client:  api.Client{Endpoint: d.Endpoint, Token: d.Token, From: api.FromClient},
		file:    d.Path,
		filePID: d.PID,
		home:    home,
	}
	b.client.Verify = b.verify
	return b, nil
}

// staleHint is the next step when api.json is stale or unusable.
const staleHint = "start krad-ade; the next start replaces the file"

// fromVariables finds the bus through the KRAD_ADE_* variables alone.
func fromVariables(env Env) (*bus, error) {
	b := &bus{client: api.Client{Endpoint: env(varEndpoint), From: api.FromClient}, home: env("HOME")}
	b.client.Verify = b.verify
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

	// The file first: the app rewrites it at each start, while KRAD_ADE_TOKEN is the token of the
	// run that opened the terminal. A file that is named but refused is an error, not a reason to
	// fall back on a token that is likely stale.
	switch s, path := env(varToken), env(varTokenFile); {
	case path != "":
		tok, err := tokenfile.Read(path)
		if err != nil {
			hint := "krad-ade writes this file itself, owner-only: if something else changed it, the token may have leaked; restart krad-ade for a new one"
			if errors.Is(err, fs.ErrNotExist) {
				hint = "krad-ade writes the file when it starts (on an SSH host, when it connects) and removes it when it stops: start krad-ade, or wait for it to reconnect"
			}
			return nil, &problem{err: fmt.Errorf("KRAD_ADE_TOKEN_FILE: %w", err), kind: errNoToken, hint: hint}
		}
		b.client.Token, b.tokenFrom = tok, varTokenFile
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
	return b.callWithin(ctx, req, answerWait(req))
}

// callWithin is call with its own wait for the answer, for a caller that cannot wait for the
// app's deadline (krad-ade-agents run's reports).
func (b *bus) callWithin(ctx context.Context, req api.Request, wait time.Duration) (api.Answer, error) {
	if err := b.fits(req); err != nil {
		return api.Answer{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	a, err := b.client.Call(cctx, req)
	switch e := err.(type) {
	case nil:
		return a, nil
	case *api.Error: // Call returns the app's error answers as they are, unwrapped
		return a, &problem{err: fmt.Errorf("%s: the app answered %w", req.Name, e), hint: b.hintFor(req.Name, e)}
	}
	if refused(err) {
		return a, err
	}
	// The client sets the connection's deadline to cctx's, so a wait that ran out can come back
	// as the read's deadline before cctx itself says so.
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
		err = context.DeadlineExceeded
	}
	switch {
	case ctx.Err() != nil:
		return a, fmt.Errorf("%s: %w", req.Name, ctx.Err())
	case errors.Is(err, api.ErrAnswerTooLong):
		return a, b.tooLong(req)
	case errors.Is(err, api.ErrTimedOut):
		return a, &problem{err: fmt.Errorf("%s: %w", req.Name, err), hint: "the app gave up at its deadline for this request; try again"}
	case errors.Is(err, context.DeadlineExceeded) && b.onHost():
		return a, b.linkSilent(req.Name, wait)
	case errors.Is(err, context.DeadlineExceeded) && req.Name == api.Hello:
		// The bus answers Hello itself, at once: a peer that keeps quiet is not the bus.
		return a, b.unreachable(&api.UnreachableError{Endpoint: b.client.Endpoint, Err: fmt.Errorf("no answer within %s", wait)}, true)
	case errors.Is(err, context.DeadlineExceeded) && wait < req.Deadline():
		return a, &problem{
			err:  fmt.Errorf("%s: no answer from the app at %s within %s", req.Name, b.client.Endpoint, wait),
			hint: "the app may be busy or stuck: check that krad-ade responds",
		}
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
	if err := a.Decode(api.AnswerHello, &h); err != nil {
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

// groupRequest says whether req is one of the group requests, whose errors come from git.
func groupRequest(req api.Name) bool {
	return req == api.CreateWorktree || req == api.Changes || req == api.Groups || req == api.RetireGroup || req == api.SyncGroup || req == api.PushGroup || req == api.RunVariants || req == api.PickVariant
}

// hintFor is the next step after the app answered req with the error e.
func (b *bus) hintFor(req api.Name, e *api.Error) string {
	if req == api.MCP { // the static krad's krad mcp, relayed to the app's (mcprelay.go)
		switch e.Code {
		case api.CodeNotFound:
			return "the app ended this krad mcp's session (it restarted, or heard nothing from it for 2 minutes): restart the MCP server in the agent's CLI (in Claude Code: /mcp)"
		case api.CodeConflict:
			return "each krad mcp running in this terminal holds a session: quit an agent's CLI that runs one, or wait 2 minutes for one that stopped to end"
		}
	}
	if req == api.ExtensionTool && b.client.From.Kind != api.CallerClient {
		switch e.Code {
		case api.CodeForbidden:
			return "config.toml, on the computer that runs krad-ade, says which environments may use each extension: add this one to the extension's environments"
		case api.CodeNotFound:
			if e.Reason == api.ReasonNoExtension {
				return "[[extension]] tables in krad-ade's config.toml name the extensions"
			}
			return "krad tool EXT lists the tools of extension EXT"
		case api.CodeBadRequest:
			return "krad tool EXT --raw shows each tool's input schema"
		case api.CodeUnavailable:
			return "the extension runs on the computer of krad-ade: check its command in config.toml there, and run it by hand to see what it says"
		}
	}
	switch e.Code {
	case api.CodeUnauthorized:
		switch {
		case b.file != "":
			return fmt.Sprintf("the app that answers does not know the token in %s, which is from an earlier run: %s", b.foundThrough(), staleHint)
		case b.tokenFrom == varTokenFile:
			return "the token in KRAD_ADE_TOKEN_FILE is from an earlier run of krad-ade: the app rewrites the file when it starts, and on an SSH host when it reconnects; if it stays wrong, restart the terminal"
		default:
			return "KRAD_ADE_TOKEN is from an earlier run of krad-ade: restart the terminal to get the current one"
		}
	case api.CodeForbidden:
		if b.client.From.Kind == api.CallerClient {
			if b.file == "" {
				return "KRAD_ADE_TERMINAL is not set, so krad calls as a program outside the app: run krad in one of krad-ade's terminals, where the app sets it"
			}
			return "outside krad-ade's terminals, krad may only list and watch agents: run this in one of them"
		}
		switch req {
		case api.Spawn, api.Send, api.Close, api.CloseSession: // the app said why; this is where to look next
			return "krad list --all --json shows each terminal's role and session"
		case api.PushGroup:
			return "ask your session's lead to push, or push from krad-ade's UI: p (push) or P (pull request) on the group's agent"
		}
		return ""
	case api.CodeNotFound:
		if req == api.CreateWorktree { // a base or a branch that the repository does not have
			return "--base and --branch take what git names: git branch lists the branches, git log --oneline the commits; krad groups the branches retired groups kept"
		}
		if groupRequest(req) && e.Reason != api.ReasonNoTerminal {
			return "krad groups lists this environment's groups and the branches retired ones kept"
		}
		return "krad list --all shows the terminals of this environment"
	case api.CodeConflict:
		switch e.Reason {
		case api.ReasonNoIdentity:
			return "set them where the repository is (on an SSH host, there): git config --global user.email you@example.com; git config --global user.name 'Your Name'; then pick again"
		case api.ReasonInTheWay:
			return "git status --ignored in the main checkout shows its untracked and ignored files: move the ones named out of the way (or commit them), then pick again"
		}
		if req == api.SyncGroup || req == api.PushGroup {
			return "" // a conflict, uncommitted work, a remote ahead: the app's message says what to do
		}
		if groupRequest(req) && e.Reason != api.ReasonTooManyTerminals {
			return "krad groups lists this environment's groups and the branches retired ones kept"
		}
		if req == api.Spawn { // the environment is at its limit of terminals, or out of numbers
			return "krad list --all shows this environment's terminals and their states, to choose which to close"
		}
		return "krad list --all shows each terminal's state; krad read T shows what an ended one printed"
	case api.CodeUnsupportedAPIVersion:
		return fmt.Sprintf("this krad speaks the agents API v%d: use the krad that came with this krad-ade (first on PATH in its terminals)", api.Version)
	case api.CodeBadRequest:
		switch {
		case (req == api.Spawn || req == api.RunVariants) && e.Reason == api.ReasonNoAgent:
			return "an [[agent]] table in config.toml, on the computer that runs krad-ade, adds an agent; the app reads them when it starts"
		case groupRequest(req):
			return "" // a name, a count, a group of no set: the app's message says what to change
		}
		return "this krad and the app disagree about the request: use the krad that came with this krad-ade"
	case api.CodeUnavailable:
		if api.IsNotServed(e) {
			return "waiting will not help: a later krad-ade serves it"
		}
		if api.IsDropped(e) { // krad writes its line at once: some other program is holding the bus's connections
			return "try again in a moment; if it keeps happening, krad-ade's log says which way in (its port, or an SSH host's forward) is flooded"
		}
		if (groupRequest(req) || req == api.Spawn || req == api.Askpass || req == api.Code) && e.Reason != api.ReasonEnvironmentDown {
			return "" // git's or the repository's state: the app's message says what to do
		}
		return "try again in a moment; krad watch says when the environment is back"
	case api.CodeInternal:
		return "try again in a moment; krad-ade's log says what failed"
	}
	return ""
}

// fits refuses a request that the bus would refuse for its length (the spec's 64 KiB a line),
// before it goes out: a long text or prompt is the user's to shorten, not a disagreement with the
// app.
func (b *bus) fits(req api.Request) error {
	line, err := json.Marshal(api.Envelope{APIVersion: api.Version, Token: b.client.Token, From: b.client.From, Request: req})
	if err != nil {
		return fmt.Errorf("%s: %w", req.Name, err)
	}
	if len(line) > api.MaxRequestLine {
		return &problem{
			err:  fmt.Errorf("%s: the request is %d bytes, and the bus reads at most %d", req.Name, len(line), api.MaxRequestLine),
			kind: errUsage,
			hint: "shorten the text you give it",
		}
	}
	return nil
}

// answer makes a request whose answer is an object ({"Agent":…}, the one its kind names), decodes
// its body into v, and returns the body as the app sent it, for --json.
func (b *bus) answer(ctx context.Context, req api.Request, v any) (json.RawMessage, error) {
	a, err := b.call(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := a.Decode(req.Name.Answer(), v); err != nil {
		return nil, b.unexpected(req, err)
	}
	return a.Body, nil
}

// ok makes a request whose answer is the bare string "Ok".
func (b *bus) ok(ctx context.Context, req api.Request) error {
	return b.okWithin(ctx, req, answerWait(req))
}

// okWithin is ok with its own wait for the answer.
func (b *bus) okWithin(ctx context.Context, req api.Request, wait time.Duration) error {
	a, err := b.callWithin(ctx, req, wait)
	if err != nil {
		return err
	}
	if a.Name != api.OK.Name || a.Body != nil {
		return b.unexpected(req, fmt.Errorf("the app answered %s where Ok was expected", termsafe.Escape(string(a.Name), 40)))
	}
	return nil
}

// tooLong explains an answer longer than krad reads: the app is there and answered, so this is
// no stale api.json, and asking again gets the same.
func (b *bus) tooLong(req api.Request) error {
	hint := "an SSH environment's host may send more than the app shows of it (very long window names or options, very many windows): krad-ade's log warns about such a host; in a terminal of one environment, krad lists that environment only"
	if req.Name == api.Read {
		hint = "ask for less of the screen: krad read T --lines N"
	}
	return &problem{
		err:  fmt.Errorf("%s: the app at %s answered, but %w", req.Name, b.client.Endpoint, api.ErrAnswerTooLong),
		hint: hint,
	}
}

// unexpected is an answer krad cannot use: the app speaks another dialect of the API.
func (b *bus) unexpected(req api.Request, err error) error {
	return &problem{
		err:  fmt.Errorf("%s: %w", req.Name, err),
		hint: "this krad and the app disagree about the answer: use the krad that came with this krad-ade",
	}
}

// snapshotWait is how long subscribe waits for a stream's first message: the bus sends its
// snapshot at once, so a peer that keeps quiet is stuck or is not the bus.
var snapshotWait = 10 * time.Second

var errNoSnapshot = errors.New("no snapshot")

// subscribe makes a streaming request and calls fn with each message. It returns nil when ctx is
// done, fn's error when fn fails, and otherwise an error for a person: the app refused, nothing
// answers or what answers is not the bus, or the stream ended or broke, which means the app
// stopped (exit code 2).
func (b *bus) subscribe(ctx context.Context, req api.Request, fn func(api.Answer) error) error {
	if err := b.fits(req); err != nil {
		return err
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	first := time.AfterFunc(snapshotWait, func() { cancel(errNoSnapshot) })
	defer first.Stop()
	var got bool
	var fnErr error
	err := b.client.Subscribe(sctx, req, func(a api.Answer) error {
		first.Stop()
		got = true
		fnErr = fn(a)
		return fnErr
	})
	if e, ok := err.(*api.Error); ok { // Subscribe returns the app's error answers as they are
		return &problem{err: fmt.Errorf("%s: the app answered %w", req.Name, e), hint: b.hintFor(req.Name, e)}
	}
	var u *api.UnreachableError
	switch {
	case ctx.Err() != nil:
		return nil
	case fnErr != nil:
		return fnErr
	case !got && refused(err):
		return err
	case errors.Is(err, api.ErrAnswerTooLong):
		return b.tooLong(req)
	case errors.Is(context.Cause(sctx), errNoSnapshot) && b.onHost():
		return b.linkSilent(req.Name, snapshotWait)
	case errors.Is(context.Cause(sctx), errNoSnapshot):
		return b.unreachable(&api.UnreachableError{Endpoint: b.client.Endpoint, Err: fmt.Errorf("no answer within %s", snapshotWait)}, true)
	case errors.As(err, &u):
		return b.unreachable(u, false)
	case err != nil && !got:
		return b.unreachable(&api.UnreachableError{Endpoint: b.client.Endpoint, Err: err}, true)
	}
	what := "the app ended the stream"
	if err != nil {
		what = "the stream broke: " + err.Error()
	}
	return &problem{
		err:  fmt.Errorf("%s: %s", req.Name, what),
		kind: errNoAPI,
		hint: "krad-ade stopped or restarted: start it, then run this again",
	}
}
