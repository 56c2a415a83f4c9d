package local

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
//   - Terminal: every request of its own environment except Askpass and those that direct
//     Workers (Spawn, Send, Close, CloseSession, RunVariants, PickVariant).
//     ExtensionTool is among what a Terminal may: which extensions config.toml lends to its
//     environment is the app's fact, checked where the extension is found (package extension).
//   - Lead: what a Terminal may, and also Spawn, CloseSession and RunVariants for its session,
//     Send and Close on its own workers, and PickVariant on its own sets (the handler checks
//     the set).
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

// Origin is where a connection came from: this computer's loopback, or the forward of one SSH
// environment. It is a fact the bus knows from how the connection reached it (its listener, or
// the Pipe a bridge opened for one environment), never anything the request says. The zero
// Origin is neither: Admit refuses every caller from it, so that a caller of Pipe that forgot to
// say where a connection came from grants nothing.
type Origin struct {
	kind originKind
	env  string // for a forward
}

type originKind uint8

const (
	originUnknown originKind = iota
	originLoopback
	originForward
)

// Loopback is the origin of connections to the bus's own listener on this computer.
var Loopback = Origin{kind: originLoopback}

// FromForward is the origin of connections that arrive through the forward of SSH environment
// env. An empty env is a programming error: it panics.
func FromForward(env string) Origin {
	if env == "" {
		panic("local: FromForward needs the environment's name")
	}
	return Origin{kind: originForward, env: env}
}

func (o Origin) String() string {
	switch o.kind {
	case originLoopback:
		return "this computer"
	case originForward:
		return "the forward of SSH environment " + o.env
	}
	return "an unknown origin"
}

// Admit is the access table's first question, before Decide: may a connection of this origin
// name this caller at all? Like Decide it is a pure function, and the one place that answers it.
//
// A connection that arrives through environment E's forward speaks for E only: it may name
// Terminal and Git callers of E and nothing else, whatever token it holds. Any process on a host
// can read the token file there (the user's, root, an admin), so the token proves nothing about
// which machine speaks; the forward does. Another environment's terminals (this computer's
// included), the Lead caller and "Client" (which lists every environment) are refused: a host
// never acts on this computer or on another host. Connections from this computer may name any
// caller: the API does not try to protect the app from the user's own processes. A connection of
// no known origin (the zero Origin) may name none.
func Admit(o Origin, from api.Caller) Decision {
	switch o.kind {
	case originLoopback:
		return Decision{Verdict: Allow}
	case originForward:
	default:
		return Decision{Why: "the bus does not know where this connection came from, so it may name no caller"}
	}
	e := o.env
	switch from.Kind {
	case api.CallerTerminal:
		if from.Terminal.Environment == e {
			return Decision{Verdict: Allow}
		}
		return Decision{Why: fmt.Sprintf("a connection through the forward of SSH environment %s speaks for %s only, not for terminal %s", e, e, from.Terminal)}
	case api.CallerGit:
		if from.Environment == e {
			return Decision{Verdict: Allow}
		}
		return Decision{Why: fmt.Sprintf("a connection through the forward of SSH environment %s speaks for %s only, not for the Git caller of %s", e, e, from.Environment)}
	case api.CallerLead:
		return Decision{Why: fmt.Sprintf("a connection through the forward of SSH environment %s cannot call as a Lead: a lead calls as its own terminal", e)}
	case api.CallerClient:
		return Decision{Why: fmt.Sprintf("a connection through the forward of SSH environment %s cannot call as Client, which sees every environment: call as this terminal (KRAD_ADE_TERMINAL), or list agents on the computer that runs krad-ade", e)}
	}
	return Decision{Why: fmt.Sprintf("a connection through the forward of SSH environment %s names a caller the app does not know", e)}
}
