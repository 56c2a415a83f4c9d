//go:build linux

package listenowner

import "net"

// Accepted reports whether a process holds the far end of conn in /proc/net/tcp or tcp6, for the
// tests that need the accepted path of Check and not the listener's.
func Accepted(conn net.Conn) bool {
	local, remote, err := ends(conn)
	if err != nil {
		return false
	}
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		sockets, _ := readTableFile(path, remote.Port())
		for _, s := range sockets {
			if s.state != stateListen && s.inode != 0 && unmap(s.local) == remote && unmap(s.remote) == local {
				return true
			}
		}
	}
	return false
}

// ProcOwner is Owner from /proc/net/tcp and tcp6 alone: the path taken where sock_diag is
// refused, which the tests hold to the same answers.
func ProcOwner(conn net.Conn) (int, error) {
	local, remote, err := ends(conn)
	if err != nil {
		return -1, err
	}
	_, uid, err := ownerFromProc(local, remote)
	return uid, err
}

// ProcFarEndHeld is FarEndHeld from /proc/net/tcp and tcp6 alone.
func ProcFarEndHeld(conn net.Conn) (bool, error) {
	local, remote, err := ends(conn)
	if err != nil {
		return false, err
	}
	return farEndFromProc(local, remote)
}
