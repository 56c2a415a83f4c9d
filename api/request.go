package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Name is the name of a request ("Hello", "Wait", …).
type Name string

// The requests of the Agents API v1.
const (
	Hello           Name = "Hello"
	List            Name = "List"
	ListAll         Name = "ListAll"
	SubscribeAgents Name = "SubscribeAgents"
	Check           Name = "Check"
	Wait            Name = "Wait"
	Read            Name = "Read"
	Send            Name = "Send"
	Spawn           Name = "Spawn"
	Close           Name = "Close"
	CloseSession    Name = "CloseSession"
	CreateWorktree  Name = "CreateWorktree"
	Changes         Name = "Changes"
	RunVariants     Name = "RunVariants"
	PickVariant     Name = "PickVariant"
	Code            Name = "Code"
	ExtensionTool   Name = "ExtensionTool"
	Askpass         Name = "Askpass"
	// Report is krad's addition to the spec's list: an agent tells the bus its own state
	// (`krad report idle`), typically from the agent's hooks.
	Report Name = "Report"
	// Groups is krad's addition to the spec's list: the groups of the caller's environment and
	// what retired groups kept (`krad groups`).
	Groups Name = "Groups"
	// RetireGroup is krad's addition to the spec's list: the person retires a group that no
	// terminal is in (`krad retire`); with force, a held one too, its nested repositories with it.
	RetireGroup Name = "RetireGroup"
	// SyncGroup is krad's addition to the spec's list: bring a group's branch up to the main
	// checkout's HEAD, merged or rebased (`krad worktree sync`).
	SyncGroup Name = "SyncGroup"
	// PushGroup is krad's addition to the spec's list: push a group's branch to the repository's
	// remote, and open a pull request for it (`krad push`, `krad pr`). A lead's alone, or the
	// person's, in the app's UI.
	PushGroup Name = "PushGroup"
	// MCP is krad's addition to the spec's list: the static krad's `krad mcp` on an SSH host,
	// relayed to one the app runs for the same terminal (mcp.go).
	MCP Name = "MCP"
)

// Names lists every request of the API, in the order of the reference pages.
var Names = []Name{
	Hello, List, ListAll, SubscribeAgents, Check, Wait, Read, Send, Spawn, Close, CloseSession,
	CreateWorktree, Changes, RunVariants, PickVariant, Code, ExtensionTool, Askpass, Report, Groups,
	RetireGroup, SyncGroup, PushGroup, MCP,
}

// Target is a terminal number in the caller's environment.
type Target int

// The request bodies. A request without fields has none.
type (
	// CheckBody: the target's agent now, or with WaitSecs after its next change.
	CheckBody struct {
		Target   Target  `json:"target"`
		WaitSecs *uint32 `json:"wait_secs,omitempty"`
	}
	// WaitBody: the target's agent once it settles after the request.
	WaitBody struct {
		Target      Target  `json:"target"`
		TimeoutSecs *uint32 `json:"timeout_secs,omitempty"`
	}
	// ReadBody: the target's screen, or its last Lines lines.
	ReadBody struct {
		Target Target `json:"target"`
		Lines  *int   `json:"lines,omitempty"`
	}
	// SendBody: Text typed into the target, then Enter unless Enter is false.
	SendBody struct {
		Target Target `json:"target"`
		Text   string `json:"text"`
		Enter  *bool  `json:"enter,omitempty"`
	}
	// SpawnBody: a new worker of the caller's session. Its Prompt is typed into the worker once
	// the worker is ready to read, never put in its command.
	SpawnBody struct {
		Title   string   `json:"title"`
		Command []string `json:"command,omitempty"`
		Agent   string   `json:"agent,omitempty"`
		Prompt  string   `json:"prompt,omitempty"`
		Group   string   `json:"group,omitempty"`
	}
	// CreateWorktreeBody: a new group of the caller's environment, a git worktree of the
	// repository that holds the environment's folder. Name "" lets the app pick one; Base ""
	// is the main checkout's HEAD; Branch continues an existing branch instead of making
	// krad/<name>.
	CreateWorktreeBody struct {
		Name   string `json:"name,omitempty"`
		Base   string `json:"base,omitempty"`
		Branch string `json:"branch,omitempty"`
	}
	// ChangesBody: what a group changed since its base commit. The group is Target's, or
	// Group ("" is the main checkout), or, with neither, the caller's own. Stat: the files
	// only. Paths: the patch of these files or folders only (the list of files stays whole).
	// Binary: binary files' patches too. MaxPatch caps the patch in bytes (0: 1 MiB; at most
	// 16 MiB), MaxFilePatch one file's own patch (0: 256 KiB; a file named in Paths gets its
	// whole patch, up to MaxPatch).
	ChangesBody struct {
		Target       *Target  `json:"target,omitempty"`
		Group        *string  `json:"group,omitempty"`
		Stat         bool     `json:"stat,omitempty"`
		Paths        []string `json:"paths,omitempty"`
		Binary       bool     `json:"binary,omitempty"`
		MaxPatch     int      `json:"max_patch,omitempty"`
		MaxFilePatch int      `json:"max_file_patch,omitempty"`
	}
	// CloseBody: close the target.
	CloseBody struct {
		Target Target `json:"target"`
	}
	// RetireGroupBody: retire group Group of the caller's environment now, as its last terminal
	// closing would; Force removes a held checkout too (one holding a nested repository).
	RetireGroupBody struct {
		Group string `json:"group"`
		Force bool   `json:"force,omitempty"`
	}
	// ReportBody: the caller's own state, as the agent sees it, and Message, what it says with
	// it. Lifecycle marks a report that does not make the agent one that reports, so that its
	// working and idle still come from its output: krad-ade-agents run's start (working) and end
	// (done or failed, with ExitCode), and an agent at rest handing the terminal back (idle: a
	// turn's end an agent tells and nothing else, or the end of an agent's session, told by
	// krad-ade-agents hook).
	ReportBody struct {
		State     State  `json:"state"`
		Message   string `json:"message,omitempty"`
		Lifecycle bool   `json:"lifecycle,omitempty"`
		ExitCode  *int   `json:"exit_code,omitempty"`
		// Setup, with Lifecycle, is krad-ade-agents run's word on its group's setup, which it
		// runs (or waits for) before its command: SetupRunning, SetupDone or SetupFailed (with
		// State failed: the command does not run).
		Setup string `json:"setup,omitempty"`
	}
)

// The setups a Report may carry (ReportBody.Setup): a group's setup, as krad-ade-agents run
// tells it, by the words of the group's record (worktree.Setup).
const (
	SetupRunning = "running"
	SetupDone    = "done"
	SetupFailed  = "failed"
)

// MaxReportMessage is the longest message a Report may carry.
const MaxReportMessage = 1024

// DefaultPatch is the cap on a Changes answer's patch when the request sets none, and MaxPatch the
// largest it may set.
const (
	DefaultPatch = 1 << 20
	MaxPatch     = 16 << 20
)

// MaxTitle is the longest title of a terminal.
const MaxTitle = 200

// MaxWait caps Wait's timeout_secs and Check's wait_secs.
const MaxWait = 30 * time.Minute

// requestKind describes one request: whether it has a body, and of what type, and the answer it
// gets when it succeeds. Adding a request is adding a line here (and its handler in the app).
type requestKind struct {
	newBody func() any // nil: a bare string
	// answer is the name of the answer on success; "" for a request no app serves yet.
	// SubscribeAgents's is its first message.
	answer AnswerName
}

var kinds = map[Name]requestKind{
	Hello:           {nil, AnswerHello},
	List:            {nil, AnswerAgents},
	ListAll:         {nil, AnswerAgents},
	SubscribeAgents: {nil, AnswerAgents},
	CloseSession:    {nil, AnswerOk},
	Check:           {func() any { return new(CheckBody) }, AnswerAgent},
	Wait:            {func() any { return new(WaitBody) }, AnswerAgent},
	Read:            {func() any { return new(ReadBody) }, AnswerScreen},
	Send:            {func() any { return new(SendBody) }, AnswerOk},
	Spawn:           {func() any { return new(SpawnBody) }, AnswerAgent},
	Close:           {func() any { return new(CloseBody) }, AnswerOk},
	CreateWorktree:  {func() any { return new(CreateWorktreeBody) }, AnswerWorktree},
	Changes:         {func() any { return new(ChangesBody) }, AnswerChanges},
	Groups:          {nil, AnswerGroups},
	RetireGroup:     {func() any { return new(RetireGroupBody) }, AnswerRetired},
	SyncGroup:       {func() any { return new(SyncGroupBody) }, AnswerSynced},
	PushGroup:       {func() any { return new(PushGroupBody) }, AnswerPushed},
	RunVariants:     {func() any { return new(RunVariantsBody) }, AnswerVariants},
	PickVariant:     {func() any { return new(PickVariantBody) }, AnswerPicked},
	Code:            {func() any { return new(CodeBody) }, AnswerOk},
	ExtensionTool:   {func() any { return new(ExtensionToolBody) }, AnswerExtension},
	Askpass:         {func() any { return new(AskpassBody) }, AnswerAskpass},
	Report:          {func() any { return new(ReportBody) }, AnswerOk},
	MCP:             {func() any { return new(MCPBody) }, AnswerMCP},
}

// Answer is the name of the answer a request of this name gets when it succeeds: "Agent" for a
// Wait, "Ok" for a Send; "" for a request no app serves yet, or no request.
func (n Name) Answer() AnswerName { return kinds[n].answer }

// Request is one request: its name and, for a request with fields, a pointer to its body
// (*WaitBody, …).
type Request struct {
	Name Name
	Body any
}

// NewRequest makes a request with a body; body must be the body type of name, or nil for a request
// without fields.
func NewRequest(name Name, body any) Request { return Request{Name: name, Body: body} }

// MarshalJSON writes the request in its wire form.
func (r Request) MarshalJSON() ([]byte, error) {
	if _, ok := kinds[r.Name]; !ok {
		return nil, fmt.Errorf("unknown request %q", r.Name)
	}
	return encodeTagged(string(r.Name), r.Body)
}

// RawRequest is a request whose name is known to be tagged but whose body is not decoded yet:
// the bus checks the token and the version before it looks at the request itself.
type RawRequest struct {
	Name string
	Body json.RawMessage
}

// UnmarshalJSON splits a request into name and body without judging either.
func (r *RawRequest) UnmarshalJSON(b []byte) error {
	name, body, err := decodeTagged(b, "request")
	if err != nil {
		return err
	}
	*r = RawRequest{Name: name, Body: body}
	return nil
}

// Decode turns a raw request into a Request. Every failure is an *Error with code bad_request that
// says what is wrong without repeating the client's input.
func (r RawRequest) Decode() (Request, error) {
	name := Name(r.Name)
	kind, ok := kinds[name]
	if !ok {
		return Request{}, Errorf(CodeBadRequest, "unknown request; the requests are %s", namesList())
	}
	if kind.newBody == nil {
		if r.Body != nil {
			return Request{}, Errorf(CodeBadRequest, "%s has no fields: send it as the string %q", name, name)
		}
		return Request{Name: name}, nil
	}
	if r.Body == nil || len(r.Body) == 0 || r.Body[0] != '{' {
		return Request{}, Errorf(CodeBadRequest, `%s has fields: send it as {"%s":{…}}`, name, name)
	}
	body := kind.newBody()
	if err := decodeStrict(r.Body, body); err != nil {
		return Request{}, Errorf(CodeBadRequest, "%s: %s", name, describeJSONError(err))
	}
	if err := validateBody(body); err != nil {
		return Request{}, Errorf(CodeBadRequest, "%s: %v", name, err)
	}
	return Request{Name: name, Body: body}, nil
}

func validateBody(body any) error {
	switch b := body.(type) {
	case *ReadBody:
		if b.Lines != nil && *b.Lines < 1 {
			return errors.New("lines must be at least 1")
		}
	case *SendBody:
		if err := checkTyped("text", b.Text); err != nil {
			return err
		}
	case *SpawnBody:
		if b.Title == "" && len(b.Command) == 0 && b.Agent == "" {
			return errors.New("a worker needs a title, a command or an agent")
		}
		if err := CheckTitle(b.Title); err != nil {
			return err
		}
		if err := checkTyped("prompt", b.Prompt); err != nil {
			return err
		}
		for i, arg := range b.Command {
			if strings.IndexByte(arg, 0) >= 0 {
				return fmt.Errorf("command[%d] holds a NUL byte, which no program's argument can hold", i)
			}
		}
		if strings.IndexByte(b.Agent, 0) >= 0 {
			return errors.New("agent holds a NUL byte, which no program's name can hold")
		}
	case *ChangesBody:
		if b.Target != nil && b.Group != nil {
			return errors.New("name a target or a group, not both")
		}
		if b.MaxPatch < 0 || b.MaxPatch > MaxPatch {
			return fmt.Errorf("max_patch must be from 0 (the default, %d MiB) to %d MiB", DefaultPatch>>20, MaxPatch>>20)
		}
		if b.MaxFilePatch < 0 || b.MaxFilePatch > MaxPatch {
			return fmt.Errorf("max_file_patch must be from 0 (the default, 256 KiB) to %d MiB", MaxPatch>>20)
		}
		for i, p := range b.Paths {
			if p == "" || strings.IndexByte(p, 0) >= 0 {
				return fmt.Errorf("paths[%d] is empty or holds a NUL byte", i)
			}
		}
	case *RunVariantsBody:
		return validateVariants(b)
	case *PickVariantBody:
		return validatePick(b)
	case *RetireGroupBody:
		if b.Group == "" {
			return errors.New("group names the group to retire: it is needed")
		}
	case *SyncGroupBody:
		return validateSync(b)
	case *PushGroupBody:
		return validatePush(b)
	case *ExtensionToolBody:
		return validateExtensionTool(b)
	case *MCPBody:
		return validateMCP(b)
	case *CodeBody:
		return validateCode(b)
	case *AskpassBody:
		return validateAskpass(b)
	case *ReportBody:
		if !slices.Contains(Reportable, b.State) {
			return errors.New("state must be working, idle, needs_input, done or failed")
		}
		if len(b.Message) > MaxReportMessage {
			return fmt.Errorf("message is longer than %d bytes", MaxReportMessage)
		}
		if b.Lifecycle && b.State == StateNeedsInput {
			return errors.New("a lifecycle report's state is working, idle, done or failed")
		}
		switch {
		case b.Setup == "":
		case !b.Lifecycle:
			return errors.New("setup is krad-ade-agents run's report, with lifecycle")
		case b.Setup == SetupRunning || b.Setup == SetupDone:
			if b.State != StateWorking {
				return errors.New("a setup running or done goes with the state working")
			}
		case b.Setup == SetupFailed:
			if b.State != StateFailed {
				return errors.New("a setup failed goes with the state failed")
			}
		default:
			return errors.New("setup must be running, done or failed")
		}
	}
	if target, ok := targetOf(body); ok && target < 1 {
		return errors.New("target must be a terminal number, 1 or more")
	}
	return nil
}

// checkTyped checks text that the app types into a terminal (a Send's text, a Spawn's prompt):
// tmux cannot type a NUL byte, and refuses the whole command that holds one.
func checkTyped(field, text string) error {
	if i := strings.IndexByte(text, 0); i >= 0 {
		return fmt.Errorf("%s holds a NUL byte at byte %d, which cannot be typed into a terminal", field, i)
	}
	return nil
}

// Target is the terminal the request is aimed at, if its body names one.
func (r Request) Target() (Target, bool) { return targetOf(r.Body) }

func targetOf(body any) (Target, bool) {
	switch b := body.(type) {
	case *CheckBody:
		return b.Target, true
	case *WaitBody:
		return b.Target, true
	case *ReadBody:
		return b.Target, true
	case *SendBody:
		return b.Target, true
	case *CloseBody:
		return b.Target, true
	case *ChangesBody:
		if b.Target != nil {
			return *b.Target, true
		}
	}
	return 0, false
}

// describeJSONError says which field was wrong without echoing the value.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %q must be %s", te.Field, jsonTypeName(te.Type.Kind().String()))
		}
		return "the body has the wrong type"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "the body is not valid JSON"
	}
	if e, ok := err.(*Error); ok {
		return e.Message
	}
	// DisallowUnknownFields: `json: unknown field "x"`. Field names are short and ours to name.
	msg := err.Error()
	if len(msg) > 80 {
		msg = msg[:80]
	}
	return "the body does not fit: " + msg
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	case "ptr":
		return "a value of another type"
	}
	return "a number in range"
}

func namesList() string {
	s := ""
	for i, n := range Names {
		if i > 0 {
			s += ", "
		}
		s += string(n)
	}
	return s
}

// Deadline is how long the app takes at most to answer the request, by the spec's table. A Wait,
// or a Check with wait_secs, gets the time it asks for (at most 30 minutes) plus one second.
// SubscribeAgents streams until either side closes: its deadline is zero, meaning none.
func (r Request) Deadline() time.Duration {
	switch r.Name {
	case SubscribeAgents:
		return 0
	case CreateWorktree, Changes, Close, PickVariant, Spawn, RunVariants, RetireGroup, SyncGroup:
		return time.Minute
	case Code, ExtensionTool:
		return 2 * time.Minute
	case PushGroup:
		// The person may have git's prompt to answer (DefaultAskpassLimit, 3 minutes), then the
		// push, then gh.
		return 5 * time.Minute
	case Wait:
		b, _ := r.Body.(*WaitBody)
		if b == nil || b.TimeoutSecs == nil {
			return MaxWait + time.Second
		}
		return capWait(*b.TimeoutSecs) + time.Second
	case Check:
		b, _ := r.Body.(*CheckBody)
		if b != nil && b.WaitSecs != nil {
			return capWait(*b.WaitSecs) + time.Second
		}
	}
	return 10 * time.Second
}

// WaitFor is how long a Wait, or a Check with wait_secs, waits: the time asked, at most 30 minutes.
// It is zero for other requests and for a Check without wait_secs.
func (r Request) WaitFor() time.Duration {
	switch b := r.Body.(type) {
	case *WaitBody:
		if b.TimeoutSecs == nil {
			return MaxWait
		}
		return capWait(*b.TimeoutSecs)
	case *CheckBody:
		if b.WaitSecs != nil {
			return capWait(*b.WaitSecs)
		}
	}
	return 0
}

func capWait(secs uint32) time.Duration {
	d := time.Duration(secs) * time.Second
	if d > MaxWait {
		return MaxWait
	}
	return d
}
