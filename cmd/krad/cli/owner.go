package cli

import (
	"errors"
	"fmt"
	"net"

	"github.com/krad-ade/krad/listenowner"
)

// verify is the api.Client's Verify for every endpoint, found through the variables or api.json:
// krad writes the token only to a listener of its own user's (package listenowner, on Linux and
// macOS; elsewhere every listener passes). The endpoint's port is reachable by every user of the
// computer, and once the app's forward or bus is gone, another user may bind it to collect
// tokens. A refusal is exit code 2, no live API: the bus is not at the endpoint.
func (b *bus) verify(conn net.Conn) error {
	err := listenowner.Check(conn)
	if err == nil {
		return nil
	}
	var foreign *listenowner.ForeignListenerError
	if errors.As(err, &foreign) {
		err = fmt.Errorf("%w: it is not krad-ade's agents bus; the token was not sent", err)
		if b.file != "" {
			return &problem{err: fmt.Errorf("api.json at %s is stale: %w", b.foundThrough(), err), kind: errNoAPI, hint: staleHint}
		}
		return &problem{err: err, kind: errNoAPI, hint: foreignHint}
	}
	return &problem{
		err:  fmt.Errorf("cannot tell whose listener is at %s, so the token was not sent: %w", b.client.Endpoint, err),
		kind: errNoAPI,
		hint: "krad sends the token only to a listener it can prove is your own user's, from the kernel's table of sockets: if krad-ade just stopped or lost its connection, start it or wait for it to reconnect",
	}
}

// foreignHint is the next step when another user's program holds the endpoint's port.
const foreignHint = "the agents bus is gone from this port (krad-ade stopped, or its forward to this host dropped) and another user's program took it: " +
	"wait for krad-ade to reconnect, or start it; if it comes back on another port, open a new terminal, which gets the new KRAD_ADE_ENDPOINT"

// refused reports whether err is verify's refusal, which says all there is to say: no other
// failure of the client is a *problem.
func refused(err error) bool {
	var p *problem
	return errors.As(err, &p)
}
