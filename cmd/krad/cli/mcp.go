package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/worktree"
)

// MCPConfig is what krad mcp gives the MCP server it runs ([Options.MCP]): who it calls as, how it
// calls, and how krad says things to people, so that a tool's text and errors are the lines krad
// prints.
type MCPConfig struct {
	// Version is krad's build, which the server names in its handshake.
	Version string
	// Caller is who the server calls as: the terminal krad mcp runs in, or Client.
	Caller api.Caller
	// Call makes one request of the bus as Caller, waiting for the answer as krad does.
	// Cancelling ctx closes the request's connection, which cancels it in the app.
	Call func(ctx context.Context, req api.Request) (api.Answer, error)
	// Explain is what krad prints for err: its error line and its hint line.
	Explain func(err error) string
	// Show is the short text krad prints for people for the answer a to req.
	Show func(req api.Request, a api.Answer) string
	// Progress is how often a waiting tool sends a progress notification.
	Progress time.Duration
}

// mcpConfigs are the snippets krad mcp --print-config prints, by the CLI they are for. The
// timeouts let a wait_for_agent run its ten minutes (Codex gives a tool 60 s by default).
var mcpConfigs = map[string]string{
	"claude": `claude mcp add krad -- krad mcp
`,
	"codex": `# ~/.codex/config.toml
[mcp_servers.krad]
command = "krad"
args = ["mcp"]
tool_timeout_sec = 1900
`,
	"gemini": `{
  "mcpServers": {
    "krad": { "command": "krad", "args": ["mcp"], "timeout": 1900000 }
  }
}
`,
}

// mcpCommand is `krad mcp`: the bus as an MCP server on stdin and stdout (package mcpserve), or,
// in the static krad, a relay to the one the app runs for this terminal (relayMCP).
func mcpCommand() *command {
	var printConfig string
	var every time.Duration
	return &command{
		name:    "mcp",
		args:    "[--print-config claude|codex|gemini]",
		summary: "serve the bus as MCP tools to an agent's CLI, on stdin and stdout",
		help: `
Serves the agents bus to an agent's CLI (Claude Code, Codex, Gemini CLI) as a Model Context
Protocol server on stdin and stdout: one tool per request this terminal may make (a lead gets
spawn_worker, send_text, wait_for_agent, read_screen…; another terminal only those that look;
outside the app's terminals, list_agents only). The agent's CLI starts it; add it with

  claude mcp add krad -- krad mcp

in one of krad-ade's terminals, or print the snippet for another CLI with --print-config.
krad mcp finds the bus as krad does and calls as this terminal: it adds no right.`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&printConfig, "print-config", "", "print what adds krad mcp to `CLI` (claude, codex or gemini), and exit")
			fs.DurationVar(&every, "progress-every", 5*time.Second, "how often a waiting tool reports progress")
			_ = fs.MarkHidden("progress-every") // for tests
		},
		run: func(x *invocation, args []string) error {
			if err := x.noArgs(args); err != nil {
				return err
			}
			if printConfig != "" {
				snippet, ok := mcpConfigs[printConfig]
				if !ok {
					return x.usageError("--print-config takes claude, codex or gemini, not %s", quote(printConfig))
				}
				_, err := io.WriteString(x.stdout, snippet)
				return err
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			if x.opts.MCP == nil {
				return x.relayMCP(b)
			}
			return x.opts.MCP(x.ctx, MCPConfig{
				Version:  x.version(),
				Caller:   b.client.From,
				Call:     b.call,
				Explain:  func(err error) string { return strings.TrimSuffix(errorLines(x.prog, err), "\n") },
				Show:     x.showAnswer,
				Progress: every,
			}, x.stdin, x.stdout)
		},
	}
}

// showAnswer is the short text krad mcp gives with a tool's structured result: what the krad
// command of the same request prints for people.
func (x *invocation) showAnswer(req api.Request, a api.Answer) string {
	var s string
	var err error
	switch a.Name {
	case api.AnswerAgent:
		s, err = shown(a.Body, line(agentLine))
	case api.AnswerAgents:
		s, err = shown(a.Body, func(w io.Writer, v []api.Agent) error { return writeAgentTable(w, v) })
	case api.AnswerScreen:
		s, err = shown(a.Body, line(func(v api.Screen) string { return v.Text }))
	case api.AnswerWorktree:
		s, err = shown(a.Body, line(x.groupLine))
	case api.AnswerChanges:
		s, err = shown(a.Body, func(w io.Writer, v worktree.Changes) error {
			if err := writeStat(w, v.Files); err != nil {
				return err
			}
			_, err := io.WriteString(w, v.Patch)
			return err
		})
	case api.AnswerGroups:
		s, err = shown(a.Body, func(w io.Writer, v worktree.List) error { return writeGroups(w, v, x.env("HOME")) })
	case api.AnswerVariants:
		s, err = shown(a.Body, line(variantsLine))
	case api.AnswerPicked:
		s, err = shown(a.Body, line(pickedLine))
	case api.AnswerPushed:
		s, err = shown(a.Body, line(pushedLine))
	case api.AnswerSynced:
		s, err = shown(a.Body, line(func(v worktree.Synced) string { return termsafe.Escape(syncedLine(v), 2000) }))
	default:
		return fmt.Sprintf("%s answered %s", req.Name, a.Name)
	}
	if err != nil {
		return fmt.Sprintf("%s answered %s", req.Name, a.Name)
	}
	return strings.TrimSuffix(s, "\n")
}

// shown is an answer's body, decoded as a T, as show writes it.
func shown[T any](body json.RawMessage, show func(w io.Writer, v T) error) (string, error) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return "", err
	}
	var b strings.Builder
	err := show(&b, v)
	return b.String(), err
}

// line adapts what makes one line of a T to shown.
func line[T any](f func(T) string) func(io.Writer, T) error {
	return func(w io.Writer, v T) error {
		_, err := io.WriteString(w, f(v))
		return err
	}
}
