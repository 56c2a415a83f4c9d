package forward

import (
	"context"

	"github.com/krad-ade/krad/internal/keyedsem"
)

// MaxStartups is how many SSH handshakes the process has under way at once with one address
// (a host, or a ProxyJump bastion that many hosts go through). OpenSSH's sshd begins to drop
// unauthenticated connections at random past 10 at once (its MaxStartups, 10:30:100): a laptop
// that wakes with 100 hosts behind one bastion, or an app started with 100 of them, would
// otherwise have sshd refuse most of them and back off, and hammer it again. The handshakes past
// the limit wait their turn, in order, before their ConnectTimeout starts.
const MaxStartups = 8

// startups holds the handshake slots of each address with handshakes under way.
var startups = keyedsem.New(MaxStartups)

// startup takes one of addr's handshake slots, waiting for one while MaxStartups are taken, or
// until ctx ends (then it returns ctx's error). The returned function gives the slot back.
func startup(ctx context.Context, addr string) (release func(), err error) {
	return startups.Acquire(ctx, addr)
}

// tryStartup takes one of addr's handshake slots if one is free now, for a probe of the path
// (see Conn.waitForPath): a probe is an unauthenticated connection to sshd as a handshake is,
// and 20 hosts behind one bastion probing it at once, beside their handshakes, took it past its
// MaxStartups (handshakes dropped, each waiting out its backoff). A probe that finds no slot is
// not needed: the handshakes under way are finding out the same.
func tryStartup(addr string) (release func(), ok bool) {
	return startups.TryAcquire(addr)
}
