//go:build linux

package listenowner

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"syscall"
)

// FarEndHeld reports whether a process still holds the far end of conn, a TCP connection on
// loopback: true while the peer's socket is open, even after its process shut down its writing
// side (a half-close); false once the peer closed it, when no process holds the socket any more
// (it lingers in FIN_WAIT2 or TIME_WAIT with inode 0) or it is gone. A half-close and a close
// read the same on conn, as the end of input: this tells them apart.
//
// It asks sock_diag for that one socket, and reads /proc/net/tcp and tcp6 where netlink is
// refused. Its errors: ErrNotLoopback, or a table that cannot be read.
func FarEndHeld(conn net.Conn) (bool, error) {
	local, remote, err := ends(conn)
	if err != nil {
		return false, err
	}
	if far, err := diagFarEnd(local, remote); err == nil {
		return len(far) > 0 && far[0].inode != 0, nil
	}
	return farEndFromProc(local, remote)
}

// farEndFromProc is FarEndHeld from /proc/net/tcp and /proc/net/tcp6.
func farEndFromProc(local, remote netip.AddrPort) (bool, error) {
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		sockets, err := readTableFile(path, remote.Port())
		if errors.Is(err, fs.ErrNotExist) && path == "/proc/net/tcp6" {
			break // a kernel without IPv6
		}
		if err != nil {
			return false, err
		}
		for _, s := range sockets {
			if s.state != stateListen && unmap(s.local) == remote && unmap(s.remote) == local {
				return s.inode != 0, nil
			}
		}
	}
	return false, nil
}

// diagFarEnd asks sock_diag for the socket bound to remote whose peer is local: none when there
// is no such socket.
func diagFarEnd(local, remote netip.AddrPort) ([]socket, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkSockDiag)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	defer syscall.Close(fd)
	far, err := diagQuery(fd, familyOf(remote), ^uint32(0), remote, local, false)
	if errors.Is(err, syscall.ENOENT) {
		return nil, nil
	}
	return far, err
}
