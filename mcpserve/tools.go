package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/cmd/krad/cli"
	"github.com/krad-ade/krad/worktree"
)

// busTool is one tool of the bus's own: the request it makes, and how to add it to a server.
type busTool struct {
	name    string
	request api.Name
	add     func(s *Server)
}

// The tools' inputs. Their schemas are made from these types; a field's jsonschema tag is its
// description, written for a model.
type (
	listIn struct {
		All bool `json:"all,omitempty" jsonschema:"true: every terminal of your environment; false (the default): only the terminals of your own group (your git worktree)"`
	}
	checkIn struct {
		Terminal int     `json:"terminal" jsonschema:"the terminal's number in your environment, as list_agents shows it (2 for main:2)"`
		WaitSecs *uint32 `json:"wait_secs,omitempty" jsonschema:"answer after the agent's next change of state, or after this many seconds (at most 1800); leave it out to answer at once"`
	}
	waitIn struct {
		Terminal    int     `json:"terminal" jsonschema:"the terminal's number in your environment, as list_agents shows it (2 for main:2)"`
		TimeoutSecs *uint32 `json:"timeout_secs,omitempty" jsonschema:"give up after this many seconds: at most 1800, 600 when left out"`
	}
	readIn struct {
		Terminal int  `json:"terminal" jsonschema:"the terminal's number in your environment, as list_agents shows it (2 for main:2)"`
		Lines    *int `json:"lines,omitempty" jsonschema:"only the screen's last N lines; leave it out for the whole screen"`
	}
	sendIn struct {
		Terminal int    `json:"terminal" jsonschema:"the number of one of your workers, as spawn_worker or list_agents gave it"`
		Text     string `json:"text" jsonschema:"the text to type, literally, as if a person typed it"`
		NoEnter  bool   `json:"no_enter,omitempty" jsonschema:"true: do not press Enter after the text"`
	}
	spawnIn struct {
		Title   string   `json:"title,omitempty" jsonschema:"a short title for the worker, one line, shown in list_agents; defaults to the program's name"`
		Command []string `json:"command,omitempty" jsonschema:"the program and its arguments, one word each, run without a shell (like [\"claude\"] or [\"sh\",\"-c\",\"make test\"]); give a command or an agent"`
		Agent   string   `json:"agent,omitempty" jsonschema:"the name of an agent profile of the app's config.toml, instead of a command"`
		Prompt  string   `json:"prompt,omitempty" jsonschema:"text typed into the worker once it is ready to read, then Enter: the task you hand it"`
		Group   string   `json:"group,omitempty" jsonschema:"run the worker in this group's git worktree (made if need be); leave it out to run where you work"`
	}
	closeIn struct {
		Terminal int `json:"terminal" jsonschema:"the number of one of your workers"`
	}
	noIn     struct{}
	reportIn struct {
		State   string `json:"state" jsonschema:"your own state: working, idle, needs_input, done or failed"`
		Message string `json:"message,omitempty" jsonschema:"one line saying why, at most 1024 bytes"`
	}
	worktreeIn struct {
		Name   string `json:"name,omitempty" jsonschema:"the group's name (letters, digits, - and _); leave it out to let the app pick one"`
		Base   string `json:"base,omitempty" jsonschema:"the commit or branch to start from; the main checkout's HEAD when left out"`
		Branch string `json:"branch,omitempty" jsonschema:"continue this existing branch instead of making krad/NAME"`
	}
	changesIn struct {
		Terminal *int     `json:"terminal,omitempty" jsonschema:"the group of this terminal; leave terminal and group out for your own group"`
		Group    *string  `json:"group,omitempty" jsonschema:"the group of this name (\"\" is the main checkout)"`
		Stat     bool     `json:"stat,omitempty" jsonschema:"true: the files changed and their line counts only, no patch"`
		Paths    []string `json:"paths,omitempty" jsonschema:"the patch of these files or folders only"`
		Binary   bool     `json:"binary,omitempty" jsonschema:"true: binary files' patches too"`
		MaxPatch int      `json:"max_patch,omitempty" jsonschema:"the most bytes of patch to return (default 1 MiB, at most 16 MiB)"`
	}
	codeIn struct {
		Path string `json:"path" jsonschema:"the file to open: absolute, or relative to the folder you work in; it must be in your environment's folder or your group's checkout"`
		Line *int   `json:"line,omitempty" jsonschema:"the line to show, from 1"`
		Wait bool   `json:"wait,omitempty" jsonschema:"true: return only once the person closed the file in the editor (at most 2 minutes)"`
	}
	variantAgentIn struct {
		Agent   string   `json:"agent,omitempty" jsonschema:"an agent profile of the app's config.toml"`
		Command []string `json:"command,omitempty" jsonschema:"or a program and its arguments, one word each"`
		Count   int      `json:"count" jsonschema:"how many workers run it"`
	}
	variantsIn struct {
		Title  string           `json:"title" jsonschema:"the set's title, one line"`
		Prompt string           `json:"prompt" jsonschema:"the task, typed into every worker once it is ready"`
		Agents []variantAgentIn `json:"agents" jsonschema:"who runs it and how many of each: at most 8 workers in all"`
		Base   string           `json:"base,omitempty" jsonschema:"the commit or branch every variant starts from; the main checkout's HEAD when left out"`
	}
	syncIn struct {
		Group string `json:"group" jsonschema:"the group whose branch to bring up to the main checkout's HEAD"`
		How   string `json:"how,omitempty" jsonschema:"merge (the default: HEAD merged into the branch, which is never rewritten) or rebase (the branch's commits replayed onto HEAD)"`
	}
	pushIn struct {
		Group  string `json:"group" jsonschema:"the group whose branch (krad/NAME) to push"`
		Remote string `json:"remote,omitempty" jsonschema:"the remote to push to; the repository's own (the main branch's, else origin) when left out"`
		PR     bool   `json:"pr,omitempty" jsonschema:"true: also open a pull request for the branch, with gh"`
		Title  string `json:"title,omitempty" jsonschema:"the pull request's title, one line; gh takes the commits' when left out"`
		Draft  bool   `json:"draft,omitempty" jsonschema:"true: open the pull request as a draft"`
	}
	pickIn struct {
		Group   string `json:"group" jsonschema:"the group of the winning variant, as run_variants gave it"`
		How     string `json:"how,omitempty" jsonschema:"squash (the default: one commit on the main checkout's branch), apply (staged, not committed), merge, or branch (nothing touched: the winner's branch is the result)"`
		Message string `json:"message,omitempty" jsonschema:"the commit message, for squash and merge"`
	}
)

// The tools' structured results: the app's answer, in an object.
type (
	agentsOut struct {
		Agents []api.Agent `json:"agents"`
	}
	agentOut struct {
		Agent api.Agent `json:"agent"`
	}
	okOut struct {
		Ok bool `json:"ok"`
	}
)

func decodeAgents(a api.Answer) (agentsOut, error) {
	var o agentsOut
	err := a.Decode(api.AnswerAgents, &o.Agents)
	if o.Agents == nil {
		o.Agents = []api.Agent{}
	}
	return o, err
}

func decodeAgent(a api.Answer) (agentOut, error) {
	var o agentOut
	return o, a.Decode(api.AnswerAgent, &o.Agent)
}

func decodeOk(a api.Answer) (okOut, error) {
	if a.Name != api.AnswerOk || a.Body != nil {
		return okOut{}, fmt.Errorf("the app answered %s where Ok was expected", a.Name)
	}
	return okOut{Ok: true}, nil
}

// decodeAs decodes an answer whose body is the result itself.
func decodeAs[T any](name api.AnswerName) func(api.Answer) (T, error) {
	return func(a api.Answer) (T, error) {
		var v T
		return v, a.Decode(name, &v)
	}
}

func target(n int) api.Target { return api.Target(n) }

// defaultWait is wait_for_agent's timeout when the model gives none: long enough for most work,
// short enough that a client's own limit on a call is not likely to pass first.
const defaultWait = 600

// busTools is the table of the bus's tools, in the order they are listed. It is made when a
// server is, not when krad starts: every krad command would pay for it otherwise.
func busTools() []busTool {
	return []busTool{
		tool("list_agents", api.List, "List agents",
			"List the agents: every terminal of the app is one (a shell, a session's lead, or a worker), with its terminal number, role, state (starting, working, idle, needs_input, done, failed, closed, unreachable) and title. Use it to find a terminal's number, or to see what your workers are doing. It never shows screen contents: read_screen does.",
			true, func(_ *Server, in listIn) api.Request {
				if in.All {
					return api.NewRequest(api.ListAll, nil)
				}
				return api.NewRequest(api.List, nil)
			}, decodeAgents),
		tool("check_agent", api.Check, "Check an agent",
			"Return one agent's state now; with wait_secs, after its next change of state (or when wait_secs pass). Use wait_for_agent instead to wait until a worker has finished its task.",
			true, func(_ *Server, in checkIn) api.Request {
				return api.NewRequest(api.Check, &api.CheckBody{Target: target(in.Terminal), WaitSecs: in.WaitSecs})
			}, decodeAgent),
		tool("wait_for_agent", api.Wait, "Wait for an agent",
			"Wait until an agent settles (idle, needs_input, done, failed or closed) after this call, then return it. After send_text or spawn_worker with a prompt, it first waits for the agent's reaction, so it does not return early on the state before. Returns an error that says TimedOut when timeout_secs pass first. Then use read_screen to see what it did.",
			true, func(_ *Server, in waitIn) api.Request {
				secs := in.TimeoutSecs
				if secs == nil {
					d := uint32(defaultWait)
					secs = &d
				}
				return api.NewRequest(api.Wait, &api.WaitBody{Target: target(in.Terminal), TimeoutSecs: secs})
			}, decodeAgent),
		tool("read_screen", api.Read, "Read a screen",
			"Return the text on a terminal's screen, or its last lines: what a worker printed, asked or answered. A terminal of your environment; a worker's screen is the way to see its result.",
			true, func(_ *Server, in readIn) api.Request {
				return api.NewRequest(api.Read, &api.ReadBody{Target: target(in.Terminal), Lines: in.Lines})
			}, decodeAs[api.Screen](api.AnswerScreen)),
		tool("send_text", api.Send, "Send text to a worker",
			"Type text into one of your workers' terminals, literally, then press Enter (unless no_enter): a follow-up instruction, or an answer to its question. Then call wait_for_agent to wait for its reaction.",
			false, func(_ *Server, in sendIn) api.Request {
				var enter *bool
				if in.NoEnter {
					enter = new(bool)
				}
				return api.NewRequest(api.Send, &api.SendBody{Target: target(in.Terminal), Text: in.Text, Enter: enter})
			}, decodeOk),
		tool("spawn_worker", api.Spawn, "Spawn a worker",
			"Start a new worker of your session in a new terminal: a command (like [\"claude\"]) or an agent profile, and optionally a prompt typed into it once it is ready. Returns the worker with its terminal number; then call wait_for_agent on it, and read_screen or changes to see its result.",
			false, func(_ *Server, in spawnIn) api.Request {
				return api.NewRequest(api.Spawn, &api.SpawnBody{Title: in.Title, Command: in.Command, Agent: in.Agent, Prompt: in.Prompt, Group: in.Group})
			}, decodeAgent),
		tool("close_worker", api.Close, "Close a worker",
			"Close one of your workers: its terminal and its program end. Its group (worktree), if it had one, is kept.",
			false, func(_ *Server, in closeIn) api.Request {
				return api.NewRequest(api.Close, &api.CloseBody{Target: target(in.Terminal)})
			}, decodeOk),
		tool("close_session", api.CloseSession, "Close every worker",
			"Close every worker of your session at once.",
			false, func(_ *Server, _ noIn) api.Request { return api.NewRequest(api.CloseSession, nil) }, decodeOk),
		tool("report_state", api.Report, "Report your own state",
			"Tell the app your own state (working, idle, needs_input, done or failed), so that the person and your lead see it, and a lead's wait_for_agent on you returns when you settle.",
			false, func(_ *Server, in reportIn) api.Request {
				return api.NewRequest(api.Report, &api.ReportBody{State: api.State(in.State), Message: in.Message})
			}, decodeOk),
		tool("create_worktree", api.CreateWorktree, "Create a group (git worktree)",
			"Make a group: a git worktree of your environment's repository on a new branch krad/NAME, so that a worker can change files without touching the main checkout. Returns its name, branch, base commit and folder; pass the name to spawn_worker's group.",
			false, func(_ *Server, in worktreeIn) api.Request {
				return api.NewRequest(api.CreateWorktree, &api.CreateWorktreeBody{Name: in.Name, Base: in.Base, Branch: in.Branch})
			}, decodeAs[worktree.Group](api.AnswerWorktree)),
		tool("changes", api.Changes, "Show a group's changes",
			"What a group (git worktree) changed since its base commit: its commits, the files changed with line counts, and the patch as git diff prints it. The group of a terminal, a group by name, or your own.",
			true, func(_ *Server, in changesIn) api.Request {
				var t *api.Target
				if in.Terminal != nil {
					v := target(*in.Terminal)
					t = &v
				}
				return api.NewRequest(api.Changes, &api.ChangesBody{Target: t, Group: in.Group, Stat: in.Stat, Paths: in.Paths, Binary: in.Binary, MaxPatch: in.MaxPatch})
			}, decodeAs[worktree.Changes](api.AnswerChanges)),
		tool("list_groups", api.Groups, "List groups",
			"List your environment's groups (git worktrees): each one's name, branch, base commit and folder, and what retired groups kept (branches, snapshots of uncommitted work).",
			true, func(_ *Server, _ noIn) api.Request { return api.NewRequest(api.Groups, nil) },
			decodeAs[worktree.List](api.AnswerGroups)),
		tool("sync_group", api.SyncGroup, "Sync a group with the main checkout",
			"Bring a group's branch (krad/NAME) up to the main checkout's current HEAD: merged (the default) or rebased. A conflict changes nothing and names the files; a group with uncommitted work is refused: commit it first.",
			false, func(_ *Server, in syncIn) api.Request {
				return api.NewRequest(api.SyncGroup, &api.SyncGroupBody{Group: in.Group, How: in.How})
			}, decodeAs[worktree.Synced](api.AnswerSynced)),
		tool("push_group", api.PushGroup, "Push a group's branch",
			"Push a group's branch (krad/NAME) to the repository's remote, with the person's credentials (git may ask them, in krad-ade's UI); with pr, open a pull request for it with gh and return its address. Only a session's lead may. What the group has not committed is not pushed.",
			false, func(_ *Server, in pushIn) api.Request {
				return api.NewRequest(api.PushGroup, &api.PushGroupBody{Group: in.Group, Remote: in.Remote, PR: in.PR, Title: in.Title, Draft: in.Draft})
			}, decodeAs[worktree.Pushed](api.AnswerPushed)),
		tool("open_in_editor", api.Code, "Open a file in the person's editor",
			"Open a file of your environment in the person's own editor, at a line: to show them something, or to ask them to look at it or edit it. With wait, return once they closed it, then read the file again. Fails with a hint when the person configured no editor.",
			false, func(_ *Server, in codeIn) api.Request {
				p := in.Path
				if p != "" && !filepath.IsAbs(p) {
					if abs, err := filepath.Abs(p); err == nil {
						p = abs
					}
				}
				return api.NewRequest(api.Code, &api.CodeBody{Path: p, Line: in.Line, Wait: in.Wait})
			}, decodeOk),
		tool("run_variants", api.RunVariants, "Run variants of a task",
			"Hand one task to several workers at once (at most 8), each in its own group from one base commit, to compare their solutions. Returns the set and each variant's group and worker; wait_for_agent on each, compare with changes, then pick_variant the best.",
			false, func(_ *Server, in variantsIn) api.Request {
				body := &api.RunVariantsBody{Title: in.Title, Prompt: in.Prompt, Base: in.Base}
				for _, a := range in.Agents {
					body.Agents = append(body.Agents, api.VariantAgent{Agent: a.Agent, Command: a.Command, Count: a.Count})
				}
				return api.NewRequest(api.RunVariants, body)
			}, decodeAs[api.Variants](api.AnswerVariants)),
		tool("pick_variant", api.PickVariant, "Pick a variant",
			"Take a settled variant's work into the main checkout (squash by default), and close the set's other variants; their groups retire with their work kept.",
			false, func(_ *Server, in pickIn) api.Request {
				return api.NewRequest(api.PickVariant, &api.PickVariantBody{Group: in.Group, How: in.How, Message: in.Message})
			}, decodeAs[api.Picked](api.AnswerPicked)),
	}
}

// tool makes the entry of a tool that makes one request: its input type In, built into the
// request by build, and its result Out, decoded from the answer by decode.
func tool[In, Out any](name string, req api.Name, title, description string, readOnly bool,
	build func(*Server, In) api.Request, decode func(api.Answer) (Out, error)) busTool {
	return busTool{name: name, request: req, add: func(s *Server) {
		t := &mcp.Tool{Name: name, Title: title, Description: description, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly}}
		mcp.AddTool(s.srv, t, func(ctx context.Context, call *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			var zero Out
			r := build(s, in)
			if err := check(r); err != nil {
				err = cli.WithHint(err, "the tool's description and input schema (tools/list) say what each argument takes")
				return nil, zero, &shown{s.cfg.Explain(err), err}
			}
			if secs, ok := waitsFor(r); ok {
				defer s.progress(ctx, call, r, secs)()
			}
			a, err := s.cfg.Call(ctx, r)
			if err != nil {
				return nil, zero, &shown{s.cfg.Explain(err), err}
			}
			out, err := decode(a)
			if err != nil {
				err = cli.WithHint(fmt.Errorf("%s: %w", r.Name, err), "this krad and the app disagree about the answer: use the krad that came with this krad-ade")
				return nil, zero, &shown{s.cfg.Explain(err), err}
			}
			text := "ok"
			if a.Body != nil {
				text = s.cfg.Show(r, a)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
		})
	}}
}

// check refuses a request the bus would refuse as malformed (a NUL byte in a text, a target of
// 0, a title with a newline), with the bus's own words, before it goes out: it runs the request
// through the decoding the bus runs.
func check(r api.Request) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var raw api.RawRequest
	if err := json.Unmarshal(line, &raw); err != nil {
		return err
	}
	_, err = raw.Decode()
	return err
}

// waitsFor says whether r waits (Wait, or Check with wait_secs), and for how many seconds.
func waitsFor(r api.Request) (uint32, bool) {
	switch b := r.Body.(type) {
	case *api.WaitBody:
		if b.TimeoutSecs != nil {
			return *b.TimeoutSecs, true
		}
	case *api.CheckBody:
		if b.WaitSecs != nil {
			return *b.WaitSecs, true
		}
	}
	return 0, false
}

// progress sends a progress notification every cfg.Progress while r waits, when the client gave
// a progress token; the function it returns stops them.
func (s *Server) progress(ctx context.Context, call *mcp.CallToolRequest, r api.Request, secs uint32) func() {
	token := call.Params.GetProgressToken()
	if token == nil {
		return func() {}
	}
	t, _ := r.Target()
	who := fmt.Sprintf("%s:%d", s.cfg.Caller.Terminal.Environment, t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		tick := time.NewTicker(s.cfg.Progress)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			waited := time.Since(began).Round(time.Second)
			_ = call.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      waited.Seconds(),
				Total:         float64(secs),
				Message:       fmt.Sprintf("waiting for %s: %s of %s", who, waited, time.Duration(secs)*time.Second),
			})
		}
	}()
	return func() { cancel(); <-done }
}
