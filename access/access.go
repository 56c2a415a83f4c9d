// Package access decides the rights of the agents bus's callers, in pure functions that are the
// one place where rights are decided; handlers never decide them again:
//   - [Admit]: may a connection of this [Origin] (this computer, or the forward of one SSH
//     environment) name this caller at all? A host's forward speaks for that host's environment
//     only, whatever token it carries.
//   - [Decide], the access table: may a caller of this [Role] make this request?
//   - [AgentFor]: what of an agent may this caller see? Its message, the agent's own words, only
//     a terminal of its environment.
//
// The bus (package local) asks both for every request, and krad mcp asks Decide which tools to
// offer, so that an agent is never offered a tool the bus would refuse. It imports nothing of
// ours but package api, so that the static krad on SSH hosts, which must not link the bus, can
// ask it too.
package access

import (
	"fmt"

	"github.com/krad-ade/krad/api"
)

// Role is who a caller is once the app has resolved the envelope's "from".
type Role int

// The roles of the spec's caller table.
const (
	// RoleClient is a program outside the app's terminals.
	RoleClient Role = iota + 1
	// RoleTerminal is a terminal or chat of an environment.
	RoleTerminal
	// RoleLead is a session's lead: its lead chat calling as its own terminal, or a Lead caller
	// carrying the lead token.
	RoleLead
	// RoleGit is the app's own git credential prompt.
	RoleGit
)

func (r Role) String() string {
	switch r {
	case RoleClient:
		return "client"
	case RoleTerminal:
		return "terminal"
	case RoleLead:
		return "lead"
	case RoleGit:
		return "git"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// TerminalRole is the role of a Terminal caller whose terminal the app lists with agent role
// agent: a session's lead calls as RoleLead, any other terminal (a shell, a worker) as
// RoleTerminal. An agent's role is what the app shows of a terminal; this is the one place that
// turns it into rights.
func TerminalRole(agent api.Role) Role {
	if agent == api.RoleLead {
		return RoleLead
	}
	return RoleTerminal
}

// Verdict is the access table's answer.
type Verdict int

const (
	// Forbid: the caller may not make the request.
	Forbid Verdict = iota
	// Allow: the caller may make the request.
	Allow
	// AllowOwnWorker: the caller may make the request only when its target is one of the caller's
	// own workers, which the app knows and the table does not.
	AllowOwnWorker
)

// Decision is a verdict and, for Forbid and AllowOwnWorker, the sentence that explains it.
type Decision struct {
	Verdict Verdict
	Why     string
}

// directsWorkers are the requests that direct Workers: only leads may make them. RunVariants
// starts workers as Spawn does, and PickVariant closes them: the spec's rule "leads are the only
// callers allowed to direct Workers" decides both.
func directsWorkers(n api.Name) bool {
	switch n {
	case api.Spawn, api.Send, api.Close, api.CloseSession, api.RunVariants, api.PickVariant:
		return true
	}
	return false
}

// shipsWork are the requests that send a group's work out of the environment (a push, a pull
// request): a lead's, never a worker's, whose work it is (the person makes them in the app's UI,
// which asks no access table). They are not directing requests, and target no worker.
func shipsWork(n api.Name) bool { return n == api.PushGroup }

// targetsWorker are the directing requests whose target must be one of the lead's own workers.
// PickVariant names a group, not a terminal: that the group is of one of the lead's own sets is
// a fact of the app's, which its handler checks.
func targetsWorker(n api.Name) bool {
	switch n {
	case api.Send, api.Close:
		return true
	}
	return false
}

// Decide is the access table: may a caller of this role make this request? It is a pure function
// of its arguments, the one place where rights are decided; handlers never decide them again.
//
// The table, from the spec's caller table:
//   - Client: Hello, List, ListAll and SubscribeAgents, across every open environment. Nothing else.
//   - Git: the askpass request only.
//   - Terminal: every request of its own environment except Askpass, those that direct
//     Workers (Spawn, Send, Close, CloseSession, RunVariants, PickVariant), and PushGroup.
//     ExtensionTool is among what a Terminal may: which extensions config.toml lends to its
//     environment is the app's fact, checked where the extension is found (package extension).
//     So is MCP, krad's relay of a host's krad mcp: the krad mcp the app runs for it calls as that
//     terminal, and each of its requests is decided here again.
//   - Lead: what a Terminal may, and also Spawn, CloseSession and RunVariants for its session,
//     Send and Close on its own workers, PickVariant on its own sets (the handler checks the
//     set), and PushGroup, which sends a group's work out (a push, a pull request): no
//     worker, nor any other Terminal, may.
func Decide(role Role, req api.Name) Decision {
	switch role {
	case RoleClient:
		switch req {
		case api.Hello, api.List, api.ListAll, api.SubscribeAgents:
			return Decision{Verdict: Allow}
		}
		return Decision{Why: fmt.Sprintf("a Client caller can only list and watch agents (Hello, List, ListAll, SubscribeAgents), not %s: run it in one of the app's terminals", req)}
	case RoleGit:
		if req == api.Askpass {
			return Decision{Verdict: Allow}
		}
		return Decision{Why: fmt.Sprintf("the Git caller makes only the askpass request, not %s", req)}
	case RoleTerminal, RoleLead:
		if req == api.Askpass {
			return Decision{Why: "only the app's own git credential prompt makes the askpass request"}
		}
		if shipsWork(req) {
			if role != RoleLead {
				return Decision{Why: fmt.Sprintf("only a session's lead (or the person, in krad-ade's UI) sends a group's work out (%s); this terminal is not a lead", req)}
			}
			return Decision{Verdict: Allow}
		}
		if !directsWorkers(req) {
			return Decision{Verdict: Allow}
		}
		if role != RoleLead {
			return Decision{Why: fmt.Sprintf("only a session's lead directs workers (%s); this terminal is not a lead", req)}
		}
		if targetsWorker(req) {
			return Decision{Verdict: AllowOwnWorker, Why: fmt.Sprintf("a lead makes %s only on its own workers", req)}
		}
		return Decision{Verdict: Allow}
	}
	return Decision{Why: "the caller is not known to the app"}
}
