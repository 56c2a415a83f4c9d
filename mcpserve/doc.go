// Package mcpserve is the agents bus as a Model Context Protocol server: what `krad mcp` serves
// on its stdin and stdout to an agent's CLI (Claude Code, Codex, Gemini CLI), so that the agent
// directs workers through typed tools instead of typing krad commands and parsing their text.
//
// # What it offers
//
// One tool per request the caller may make: list_agents, check_agent, wait_for_agent,
// read_screen, send_text, spawn_worker, close_worker, close_session, report_state,
// create_worktree, changes, list_groups, open_in_editor (Code), run_variants and pick_variant.
// Which of them a session lists follows the caller's rights, as the one access table (package
// access) gives them: a terminal that is not a session's lead is not offered spawn_worker,
// send_text and the others that direct workers; a Client caller (outside the app's terminals)
// only list_agents. ExtensionTool has one tool per lent extension's tool (see Extension tools);
// Askpass is the Git caller's alone: a secret never goes to a model. A tool's input schema is
// made from a Go type; its result is structured content (the app's answer) and a short text,
// the one krad prints for people.
//
// krad runs it in its own process ([Serve], which it gives package cli as cli.Options.MCP). The
// static krad on SSH hosts links none of this package, nor the SDK: its krad mcp relays to a krad
// mcp the app runs in its process for that terminal (package mcprelay), with this same server.
//
// # Security model
//
// The server adds no right and holds no new secret: every tool is one request to the bus, made
// as the terminal krad mcp runs in, through the caller the CLI gives it (Config.Call), with the
// token the CLI found. The bus decides again on each request; the listing only spares an agent
// tools it would be refused. The token never appears in a tool's result, its errors or the
// server's output.
//
// # Errors, waits and cancelling
//
// An error of the bus, or of reaching it, is a tool result with isError set and the lines krad
// prints for it ("krad: error: …", "krad: hint: …"), not a protocol error: a model reads it and
// can act on the hint. wait_for_agent, and check_agent with a wait, send progress notifications
// while they wait when the client gave a progress token. A call the client cancels, or a client
// that goes away (stdin closed), closes the call's connection to the bus, which cancels the
// request there (the spec: leaving cancels).
//
// # Extension tools
//
// [Extensions] is the hook for tools beyond the bus's own requests: the tools of the person's MCP
// servers that the app lends through ExtensionTool. Each is offered as "<extension>_<tool>" to a
// caller the access table lets make ExtensionTool.
package mcpserve
