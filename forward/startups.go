package forward

import (
	"context"
	"errors"
	"sync"
)

// MaxStartups is how many SSH handshakes the process has under way at once with one address
// (a host, or a ProxyJump bastion that many hosts go through). OpenSSH's sshd begins to drop
// unauthenticated connections at random past 10 at once (its MaxStartups, 10:30:100): a laptop
// that wakes with 100 hosts behind one bastion, or an app started with 100 of them, would
// otherwise have sshd refuse most of them and back off, and hammer it again. The handshakes past
// the limit wait their turn, in order, before their ConnectTimeout starts.
const MaxStartups = 8

// startups holds, for each address with handshakes under way, the slots they take.
var startups = struct {
	mu sync.Mutex
	m  map[string]*startupSlots
}{m: map[string]*startupSlots{}}

type startupSlots struct {
	slots chan struct{}
	users int // those holding or waiting for a slot; the entry goes with the last
}

// startup takes one of addr's handshake slots, waiting for one while MaxStartups are taken, or
// until ctx ends (then it returns ctx's error). The returned function gives the slot back.
func startup(ctx context.Context, addr string) (release func(), err error) {
	return takeStartup(ctx, addr, true)
}

// tryStartup takes one of addr's handshake slots if one is free now, for a probe of the path
// (see Conn.waitForPath): a probe is an unauthenticated connection to sshd as a handshake is,
// and 20 hosts behind one bastion probing it at once, beside their handshakes, took it past its
// MaxStartups (handshakes dropped, each waiting out its backoff). A probe that finds no slot is
// not needed: the handshakes under way are finding out the same.
func tryStartup(addr string) (release func(), ok bool) {
	release, err := takeStartup(context.Background(), addr, false)
	return release, err == nil
}

// errNoStartup is takeStartup's answer, without wait, when every slot is taken.
var errNoStartup = errors.New("every handshake slot of the address is taken")

// takeStartup is startup, and with wait false tryStartup (errNoStartup when no slot is free).
func takeStartup(ctx context.Context, addr string, wait bool) (release func(), err error) {
	startups.mu.Lock()
	s := startups.m[addr]
	if s == nil {
		s = &startupSlots{slots: make(chan struct{}, MaxStartups)}
		startups.m[addr] = s
	}
	s.users++
	startups.mu.Unlock()
	leave := func() {
		startups.mu.Lock()
		if s.users--; s.users == 0 {
			delete(startups.m, addr)
		}
		startups.mu.Unlock()
	}
	select {
	case s.slots <- struct{}{}:
	default:
		if !wait {
			leave()
			return nil, errNoStartup
		}
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			leave()
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-s.slots
			leave()
		})
	}, nil
}
