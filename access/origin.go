package access

import (
	"fmt"

	"github.com/krad-ade/krad/api"
)

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
		panic("access: FromForward needs the environment's name")
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
