package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/mcpserve"
	"github.com/krad-ade/krad/worktree"
)

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

// mcpCommand is `krad mcp`: the bus as an MCP server on stdin and stdout (package mcpserve).
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
			srv, err := mcpserve.New(x.ctx, mcpserve.Config{
				Version:  x.version(),
				Caller:   b.client.From,
				Call:     b.call,
				Explain:  func(err error) string { return strings.TrimSuffix(errorLines(x.prog, err), "\n") },
				Show:     x.showAnswer,
				Progress: every,
				// The person's MCP servers lent to this environment, as tools of its own.
				Extensions: busExtensions{b},
			})
			if err != nil {
				return err
			}
			return srv.Run(x.ctx, io.NopCloser(x.stdin), nopWriteCloser{x.stdout})
		},
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// showAnswer is the short text krad mcp gives with a tool's structured result: what the krad
// command of the same request prints for people.
func (x *invocation) showAnswer(req api.Request, a api.Answer) string {
	var b strings.Builder
	var err error
	switch a.Name {
	case api.AnswerAgent:
		var v api.Agent
		if err = json.Unmarshal(a.Body, &v); err == nil {
			b.WriteString(agentLine(v))
		}
	case api.AnswerAgents:
		var v []api.Agent
		if err = json.Unmarshal(a.Body, &v); err == nil {
			err = writeAgentTable(&b, v)
		}
	case api.AnswerScreen:
		var v api.Screen
		if err = json.Unmarshal(a.Body, &v); err == nil {
			b.WriteString(v.Text)
		}
	case api.AnswerWorktree:
		var v worktree.Group
		if err = json.Unmarshal(a.Body, &v); err == nil {
			b.WriteString(x.groupLine(v))
		}
	case api.AnswerChanges:
		var v worktree.Changes
		if err = json.Unmarshal(a.Body, &v); err == nil {
			if err = writeStat(&b, v.Files); err == nil {
				b.WriteString(v.Patch)
			}
		}
	case api.AnswerGroups:
		var v worktree.List
		if err = json.Unmarshal(a.Body, &v); err == nil {
			err = writeGroups(&b, v, x.env("HOME"))
		}
	case api.AnswerVariants:
		var v api.Variants
		if err = json.Unmarshal(a.Body, &v); err == nil {
			b.WriteString(variantsLine(v))
		}
	case api.AnswerPicked:
		var v api.Picked
		if err = json.Unmarshal(a.Body, &v); err == nil {
			b.WriteString(pickedLine(v))
		}
	default:
		return fmt.Sprintf("%s answered %s", req.Name, a.Name)
	}
	if err != nil {
		return fmt.Sprintf("%s answered %s", req.Name, a.Name)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
