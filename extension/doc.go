// Package extension runs the person's own MCP servers for the app, so that agents can use them
// through the bus's ExtensionTool request: a tool that runs here, on the computer of krad-ade,
// with the person's environment and credentials, used by an agent anywhere, a host three SSH
// hops away included.
//
// An extension is an ordinary MCP server that speaks over stdio, named in config.toml:
//
//	[[extension]]
//	name = "tracker"                          # what ExtensionTool and krad tool name
//	command = ["tracker-mcp", "--stdio"]      # its argv; no shell
//	env = { TRACKER_PROFILE = "work" }        # added to the app's own environment
//	environments = ["main", "build"]          # who may use it; none: main only; ["*"]: all
//
// A [Supervisor] starts an extension when it is first used, with the app's environment (less the
// KRAD_ADE_* variables) and the extension's env, and keeps one MCP session to it (the official
// Go SDK's client over its CommandTransport). The session is stopped after [DefaultIdle] without
// use and when the app exits. A request that finds the extension dead starts it again; a request
// may start it twice at most (a start and one restart), after which it answers unavailable with
// the last line the extension wrote to stderr. A tools/call that was sent is never sent again:
// the tool may have acted.
//
// # Security model
//
// The extension's credentials never leave this computer: only a request's arguments and the
// tool's result cross the bus (and so, for a host's terminal, the SSH tunnel). An extension is
// lent to the environments its environments key names and to no other; a connection through a
// host's forward can only speak for that host's environment (package local's Admit), so a host
// runs an extension here only when config.toml lends it that host's environment. config.toml,
// which names the commands, must pass package config's owner and mode checks before it is read.
// Results, like screens, are never put on the bus's events or in the log; the log says only which
// extension started, stopped or died.
//
// What is not protected: an extension runs as the person, with all their rights, and a lent
// extension does whatever an agent that may call it asks of it.
package extension
