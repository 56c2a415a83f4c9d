package listenowner

import (
	"net/netip"
	"os"
)

// servers is what would receive bytes written on a connection from local to remote (remote is
// the listener's side, the address the client dialed), among the sockets of /proc/net/tcp and
// /proc/net/tcp6:
//
//   - the far end of the connection itself, once a process accepted it: its uid is the
//     accepting process's, which reads what the client writes.
//   - otherwise the listening sockets the kernel would hand the connection to, which is where it
//     waits to be accepted: those bound to the address itself before those bound to a wildcard,
//     and for IPv4, IPv4 sockets before IPv6 ones (::ffff:127.0.0.1, then ::), as the kernel's
//     own lookup scores them. Several come back only when they tie (SO_REUSEPORT). A waiting
//     connection is the listener's until it is accepted, and is reset if the listener closes,
//     so the listener answers for it.
//
// None means no socket in the tables serves the connection.
func servers(sockets []socket, local, remote netip.AddrPort) []socket {
	local, remote = unmap(local), unmap(remote)
	for _, s := range sockets {
		if s.state != stateListen && s.inode != 0 && unmap(s.local) == remote && unmap(s.remote) == local {
			return []socket{s}
		}
	}
	var best []socket
	bestRank := 0
	for _, s := range sockets {
		switch r := listenRank(s, remote); {
		case r == 0 || r < bestRank:
		case r > bestRank:
			best, bestRank = []socket{s}, r
		default:
			best = append(best, s)
		}
	}
	return best
}

// rankExact4 is the rank of an IPv4 listener bound to the address itself, the highest there is.
const rankExact4 = 4

// listenRank is how much the kernel prefers the socket s for a new connection to dst (an
// unmapped address): 0 when s would not take it at all.
func listenRank(s socket, dst netip.AddrPort) int {
	if s.state != stateListen || s.local.Port() != dst.Port() {
		return 0
	}
	a, d := s.local.Addr(), dst.Addr()
	if d.Is4() {
		switch {
		case a == d:
			return rankExact4
		case a.Is4In6() && a.Unmap() == d:
			return 3
		case a == netip.IPv4Unspecified():
			return 2
		case a == netip.IPv6Unspecified() && s.v6only:
			return 0
		case a == netip.IPv6Unspecified(), a.Is4In6() && a.Unmap() == netip.IPv4Unspecified():
			// [::] takes IPv4 too unless it is IPV6_V6ONLY, which Linux's table does not show
			// (macOS's does: v6only); ranked last, it decides only when nothing better listens.
			return 1
		}
		return 0
	}
	switch {
	case a == d:
		return 2
	case a == netip.IPv6Unspecified():
		return 1
	}
	return 0
}

// unmap turns ::ffff:a.b.c.d into a.b.c.d, the form the rest of this package compares.
func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// uidOf is the uid that owns the sockets servers found: when several listeners tie, one that is
// not this process's user's, if any, so that a squatter among them is refused.
func uidOf(found []socket) int {
	self := os.Getuid()
	for _, s := range found {
		if int(s.uid) != self {
			return int(s.uid)
		}
	}
	return int(found[0].uid)
}
