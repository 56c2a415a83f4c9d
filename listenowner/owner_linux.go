//go:build linux

package listenowner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
)

// owner is the address conn went to and the uid that owns the socket serving it.
func owner(conn net.Conn) (netip.AddrPort, int, error) {
	local, remote, err := ends(conn)
	if err != nil {
		return remote, -1, err
	}
	// sock_diag first: it asks for just the sockets wanted. /proc/net/tcp when it is refused.
	if sockets, err := diagSockets(local, remote); err == nil {
		found := servers(sockets, local, remote)
		if len(found) == 0 {
			return remote, -1, fmt.Errorf("%w at %s", ErrNoListener, remote)
		}
		return remote, uidOf(found), nil
	}
	return ownerFromProc(local, remote)
}

// ownerFromProc is owner from /proc/net/tcp and /proc/net/tcp6.
func ownerFromProc(local, remote netip.AddrPort) (netip.AddrPort, int, error) {
	// An IPv4 connection may be served from either table (a dual-stack [::] listener is in
	// tcp6), an IPv6 one only from tcp6. Each read walks the kernel's whole table of the host's
	// connections, so tcp6 is left unread when tcp holds the answer already: the far end, which
	// is in one table only, or a listener on the address itself, which beats any in tcp6.
	var sockets, found []socket
	if remote.Addr().Is4() {
		s, err := readTableFile("/proc/net/tcp", remote.Port())
		if err != nil {
			return remote, -1, err
		}
		sockets = s
		found = servers(sockets, local, remote)
		if len(found) > 0 && (found[0].state != stateListen || listenRank(found[0], remote) == rankExact4) {
			return remote, uidOf(found), nil
		}
	}
	s, err := readTableFile("/proc/net/tcp6", remote.Port())
	switch {
	case errors.Is(err, fs.ErrNotExist) && remote.Addr().Is4():
		// A kernel without IPv6 has no tcp6.
	case err != nil:
		return remote, -1, err
	default:
		sockets = append(sockets, s...)
		found = servers(sockets, local, remote)
	}
	if len(found) == 0 {
		return remote, -1, fmt.Errorf("%w at %s in /proc/net/tcp and /proc/net/tcp6", ErrNoListener, remote)
	}
	return remote, uidOf(found), nil
}

// readTableFile reads the sockets with local port port from one of /proc/net/tcp and
// /proc/net/tcp6, whose addresses the kernel prints in the host's byte order.
func readTableFile(path string, port uint16) ([]socket, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the sockets: %w", err)
	}
	defer f.Close()
	s, err := readTable(f, binary.NativeEndian, port)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return s, nil
}
