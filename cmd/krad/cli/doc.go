// Package cli is the command tree of krad, the CLI of krad-ade's agents bus, shared by the krad
// that ships with the app (cmd/krad) and the static krad the app installs on SSH hosts
// (cmd/krad-static). Each main is a few lines that call [Run]; tests call Run in-process.
//
// # Finding the bus
//
// Inside the app's terminals the KRAD_ADE_* variables say where the bus is, and they win: when
// KRAD_ADE_ENDPOINT or KRAD_ADE_TERMINAL is set, krad uses the variables only. The endpoint is
// KRAD_ADE_ENDPOINT, a loopback host:port; the token is the content of the owner-only file
// KRAD_ADE_TOKEN_FILE names (see package tokenfile), which the app rewrites at each start, else
// KRAD_ADE_TOKEN, which is the token of the run that opened the terminal; the caller is the
// terminal KRAD_ADE_TERMINAL names ("main:4"), or "Client" when it is unset. In a window a person
// opened with a command (tmux new-window 'bash'), which has the session's KRAD_ADE_ENDPOINT but
// not a KRAD_ADE_TERMINAL of its own, krad learns its terminal from the window's @krad_terminal,
// as krad-ade-agents shell does (windowTerminal).
//
// Outside them, krad reads api.json, which the app leaves in its config folder while it runs,
// through [Options.Discover], and calls as "Client". The static build has no Discover: it uses
// the variables only, and says so when they are missing.
//
// Before it writes the token on a connection, krad checks on Linux that the listener there is
// its own user's (package listenowner): every user of the computer can reach the loopback port,
// and once the app's bus or forward is gone another user may bind it to collect tokens. Another
// user's listener is refused, and the token is not sent (exit code 2). Elsewhere every listener
// passes.
//
// # Commands
//
//	krad list [--all]                 List / ListAll: the agents, as a table
//	krad watch                        SubscribeAgents: the table, then a line per change, until
//	                                  interrupted; 2 when the app ends the stream
//	krad check T [--wait D]           Check: one agent in one line
//	krad wait T [--timeout D]         Wait: the agent once it settles; 1 when it failed or was
//	                                  closed, 4 when it did not settle in time
//	krad read T [--lines N]           Read: the screen's text, not escaped
//	krad send T TEXT… [--no-enter]    Send: TEXT, or stdin with "-"; prints nothing
//	krad spawn [--title T] [--group G] [--prompt P] -- CMD…
//	                                  Spawn: the new worker in one line
//	krad close T, krad close-session  Close, CloseSession; print nothing
//	krad report STATE [--message M]   Report: for an agent's hooks; prints nothing
//	krad mcp                          the bus as an MCP server on stdin and stdout, one tool
//	                                  per request the caller may make (package mcpserve, through
//	                                  Options.MCP); the static krad, which links no MCP server,
//	                                  relays to one the app runs (the MCP request, mcprelay.go)
//	krad api, krad api info           Hello: the API's version, and where krad found it
//	krad version                      krad's own version
//
// Every command that prints data takes --json: one line of JSON, the app's own objects as it
// sent them (watch: each message of the stream as it comes). A target T is a terminal of the
// caller's own environment, as the app reads it: "2", or "main:2" when main is that environment
// (KRAD_ADE_TERMINAL); naming another environment is a usage error.
//
// # Exit codes
//
// ExitCodes in exit.go is the one table of the exit codes and what each means: krad --help's
// footer is made from it, README.md's table is tested equal to it, and exitCode maps what went
// wrong to a code.
//
// # Output
//
// Data goes to stdout: a line, a table or aligned "key  value" lines for people, one line of
// JSON with --json. An agent in one line is "main:2 worker 'fix flaky test' idle": terminal,
// role, title and state (with the exit code of an ended one: "failed (1)"). Errors go to
// stderr as "krad: error: <what failed>", then "krad: hint: <next step>" when there is one. No output contains the bus token, except `krad api info --show-token`, and
// nothing read from outside (arguments, variables, answers) is printed without escaping what a
// terminal would act on, but for the one thing asked for as it is: the screen krad read prints.
//
// # Adding a command
//
// A command is one small file: a function that returns a *command with its name, usage, flags
// and run function, listed once in the tree (tree.go; api.go and check.go are the models). Its
// run function reads its arguments first (x.oneTarget, x.usageError), then finds the bus with
// x.bus() and makes requests with b.answer, b.ok or b.subscribe, whose errors already say what
// failed with a hint; printAnswer (show.go) makes one and prints its answer, the app's JSON
// under --json, else a line for people. The exit code comes from the one table, exitCode in
// exit.go. show.go says how agents look to people.
//
// # krad-ade-agents
//
// Called by the name krad-ade-agents, the same executable is the agents' companion:
//
//	krad-ade-agents run [--title T] -- CMD…   run CMD in this terminal; report working when it
//	                                          starts, done or failed with its exit code when it
//	                                          ends; exit with its exit code
//	krad-ade-agents shell                     tmux's default-command: the user's shell, with
//	                                          KRAD_ADE_TERMINAL from the window's @krad_terminal
//
// run's reports go through the variables only, each waits at most 2 seconds, and one that fails
// is a warning, never a reason to stop or delay the command. CMD shares the terminal's process
// group (Ctrl-C reaches it directly); SIGTERM and SIGHUP sent to run are passed on. run exits
// with CMD's exit code, 128 plus the signal's number when a signal killed it, 127 when CMD is
// not found and 126 when it cannot run.
package cli
