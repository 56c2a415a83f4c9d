// Package api is the Agents API v1 as it travels on the wire: the envelope every request carries,
// the callers, the tokens, the requests and their answers, the errors, and the line framing with
// its 64 KiB limit; and the variables through which the app's terminals find the bus
// ([TerminalVars]). It also holds the client side, [Client.Call] and [Client.Subscribe], that the
// krad CLI uses.
//
// # The wire
//
// A client opens a TCP connection to the bus on 127.0.0.1, writes one envelope as a single line of
// JSON ending in "\n", reads one line of JSON back, and the bus closes the connection:
//
//	{"api_version":1,"token":"6f1c…","from":"Client","request":"Hello"}
//	{"Hello":{"api_version":1,"build":"0.1.0","pid":48211}}
//
// SubscribeAgents is the exception: the bus keeps writing one line per message until either side
// closes. Requests and answers without fields are bare strings ("List", "Ok", "TimedOut"); the others
// are objects with exactly one key ({"Wait":{"target":4,"timeout_secs":600}}).
//
// # Secrets
//
// [Token] holds a token and prints "[REDACTED]" under every fmt verb, in JSON and in slog. The
// value leaves the type only through [Token.Reveal], called only where the token must go out: an
// envelope, api.json and the token files, the environment of this computer's terminals
// ([TerminalVars]), and `krad api info --show-token`.
//
// # What this package does not do
//
// It decides no rights and holds no state: the bus (package local) runs the order of checks and
// the access table. This package imports nothing else of the project.
package api
