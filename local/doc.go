// Package local is the agents bus on this computer: a listener on 127.0.0.1 that serves the
// Agents API v1, one request per connection, in front of the app.
//
// # What a connection goes through
//
// The client has 10 seconds after connecting to send one line of at most 64 KiB. The bus then
// runs the spec's order of checks, in one function ([Server] check), each failure answered at once:
//
//  1. the line must be a valid envelope, else bad_request;
//  2. the token is compared in constant time: the lead token for a {"Lead":…} caller, the bus
//     token for anyone else, else unauthorized;
//  3. the envelope's api_version must be 1, else unsupported_api_version, Hello included;
//  4. the request must be one the API knows, with the right fields, else bad_request; Hello is
//     answered here by the bus itself, without touching the app, so it answers while the app is
//     busy. Other requests go to the app's [Handler], which resolves the caller to an
//     [access.Role]; the access table, the pure function [access.Decide], says whether that role
//     may make that request.
//
// One line is answered before any decoding: a Client's Hello exactly as api.Client and the spec's
// printf write it, compared whole and in constant time with the line the bus makes from its own
// token. It is the line every check of the order would pass; any other line takes the checks.
//
// The handler then runs under the request's deadline (the spec's table, [api.Request.Deadline]);
// when it passes, the bus answers "TimedOut" and cancels the handler's context. A client that
// closes its connection while its request waits cancels the handler's context too; one that only
// shuts down its writing side after its line (nc -N) has not left, and gets its answer or its
// stream (package internal/hangup tells the two apart).
//
// SubscribeAgents keeps the connection open: the handler sends on a [Stream], the bus writes one
// line per message. A subscriber that stops reading is dropped once it is a full buffer behind,
// and slows no other connection.
//
// # Security model
//
// The listener binds 127.0.0.1 only. Anyone on this computer can connect to it, and anyone on an
// SSH host to its forward, so what a connection may hold before its token is checked is bounded
// for each origin (gate.go): a number of connections and the bytes of their partial lines, the
// oldest dropped first. Every request needs the bus token, which changes each time
// the app starts; the tokens are never logged (api.Token redacts itself) and no log line carries a
// request's content. The caller named in "from" is declared, not proven: the token proves only
// that the client runs as the user. A Client caller gets Hello, List, ListAll and
// SubscribeAgents, and nothing else.
//
// Where a connection came from is not declared: it is its [access.Origin], which the bus knows from
// how the connection reached it. The listener's connections are this computer's; a connection that
// a host made to its forward reaches the bus through [Server.Pipe] with the origin of that SSH
// environment, and speaks for that environment only ([access.Admit]): it may name that
// environment's Terminal and Git callers, and any other caller — this computer's terminals, another
// host's, the Lead caller, "Client" — is refused with forbidden, whatever token it carries. Every
// process on a host can read the token file there (the user, root, an admin), so the token proves
// nothing about which machine speaks; the forward does, and a host never acts on this computer.
package local
