package listenowner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// On macOS the kernel's own table of TCP sockets is the net.inet.tcp.pcblist_n sysctl, the list
// netstat reads (pcblist.go reads it). It shows every socket with its owner's uid (so_uid, the
// uid of the credential the socket was made with), its state, and whether a file still refers to
// it. One read copies the whole table, TIME_WAIT sockets included, under the kernel's lock.
//
// What differs from Linux: XNU makes the listener's side of a connection when the handshake
// starts (sonewconn), with the listener's credential, and keeps it when a process accepts it
// (bsd/kern/uipc_socket2.c). So the far end's uid is the listener's owner's, before the accept
// and after; Linux shows the accepting process's user once accepted. Both are the user that
// made the listener, except where a listener's descriptor was handed to another user's process,
// which only its owner or root can do.

// pcblistName is the sysctl that lists TCP sockets (SYSCTL_PROC(_net_inet_tcp, OID_AUTO,
// pcblist_n, …) in bsd/netinet/tcp_subr.c).
const pcblistName = "net.inet.tcp.pcblist_n"

// readPCBList reads the TCP sockets whose local port is port (all of them when port is 0).
func readPCBList(port uint16) ([]socket, error) {
	var b []byte
	var err error
	// The size asked first is the kernel's estimate, with room for an eighth more sockets; a
	// table that outgrew it between the two calls is ENOMEM, and is asked for again.
	for range 3 {
		if b, err = unix.SysctlRaw(pcblistName); !errors.Is(err, unix.ENOMEM) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read the sockets (sysctl %s): %w", pcblistName, err)
	}
	s, err := parsePCBList(b, port)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", pcblistName, err)
	}
	return s, nil
}

// owner is the address conn went to and the uid that owns the socket serving it.
func owner(conn net.Conn) (netip.AddrPort, int, error) {
	local, remote, err := ends(conn)
	if err != nil {
		return remote, -1, err
	}
	sockets, err := readPCBList(remote.Port())
	if err != nil {
		return remote, -1, err
	}
	uid, err := pcbOwner(sockets, local, remote)
	return remote, uid, err
}

// FarEndHeld reports whether a process still holds the far end of conn, a TCP connection on
// loopback: true while the peer's socket is open, even after its process shut down its writing
// side (a half-close); false once the peer closed it (no file refers to the socket any more,
// SS_NOFDREF) or it is gone. Its errors: ErrNotLoopback, or a table that cannot be read.
func FarEndHeld(conn net.Conn) (bool, error) {
	local, remote, err := ends(conn)
	if err != nil {
		return false, err
	}
	sockets, err := readPCBList(remote.Port())
	if err != nil {
		return false, err
	}
	return pcbFarEndHeld(sockets, local, remote), nil
}

// WriteListeners writes the TCP sockets (IPv4 and IPv6) that listen on port, in the lines of
// Linux's /proc/net/tcp with its header (see the Linux version), read from macOS's list, and
// returns how many it wrote.
func WriteListeners(w io.Writer, port uint16) (int, error) {
	sockets, err := readPCBList(port)
	if err != nil {
		return 0, err
	}
	var socks []socket
	for _, s := range sockets {
		if s.state == stateListen {
			socks = append(socks, s)
		}
	}
	if err := writeTable(w, socks, binary.NativeEndian); err != nil {
		return 0, err
	}
	return len(socks), nil
}

// WriteSocketsOf returns an error wrapping errors.ErrUnsupported on macOS: it serves the check
// of a forward on an SSH host, which runs the static krad for Linux.
func WriteSocketsOf(w io.Writer, pid int) (int, error) {
	return 0, fmt.Errorf("list a process's sockets: %w", errors.ErrUnsupported)
}
