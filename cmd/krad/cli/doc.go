// Package cli is the command tree of krad, the CLI of krad-ade's agents bus, shared by the krad
// that ships with the app (cmd/krad) and the static krad the app installs on SSH hosts
// (cmd/krad-static). Each main is a few lines that call [Run]; tests call Run in-process.
//
// # Finding the bus
//
// Inside the app's terminals the KRAD_ADE_* variables say where the bus is, and they win: when
// KRAD_ADE_ENDPOINT or KRAD_ADE_TERMINAL is set, krad uses the variables only. The endpoint is
// KRAD_ADE_ENDPOINT, a loopback host:port; the token is KRAD_ADE_TOKEN, else the content of the
// owner-only file KRAD_ADE_TOKEN_FILE names (see package tokenfile); the caller is the terminal
// KRAD_ADE_TERMINAL names ("main:4"), or "Client" when it is unset.
//
// Outside them, krad reads api.json, which the app leaves in its config folder while it runs,
// through [Options.Discover], and calls as "Client". The static build has no Discover: it uses
// the variables only, and says so when they are missing.
//
// # Exit codes
//
//	0  success
//	1  the app answered an error (not_found, conflict, bad_request, unavailable, internal),
//	   or another failure
//	2  no live API: nothing answers, api.json is stale, or no endpoint was found
//	3  unauthorized or forbidden, or no token that krad may use (KRAD_ADE_TOKEN malformed, the
//	   token file missing or refused)
//	4  timed out: the app answered "TimedOut"
//	5  usage: bad flags or arguments
//	6  the app answered unsupported_api_version
//
// # Output
//
// Data goes to stdout: a line or aligned "key  value" lines for people, one line of JSON with
// --json. Errors go to stderr as "krad: error: <what failed>", then "krad: hint: <next step>"
// when there is one. No output contains the bus token, except `krad api info --show-token`, and
// nothing read from outside (arguments, variables, answers) is printed without escaping what a
// terminal would act on.
//
// # Adding a command
//
// A command is one small file: a function that returns a *command with its name, usage, flags
// and run function, listed once in the tree (tree.go; api.go is the model). Its run function
// finds the bus with x.bus() and makes requests with b.call, whose errors already say what failed
// with a hint; the exit code comes from the one table, exitCode in exit.go.
//
// # krad-ade-agents
//
// Called by the name krad-ade-agents, the same executable is the agents' companion, whose verbs
// (run, for one) come later.
package cli
