//go:build linux

package listenowner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// The sock_diag netlink interface asks the kernel for just the sockets wanted: the far end of one
// connection, and the listening sockets. /proc/net/tcp walks every socket of the host, TIME_WAIT
// ones included, which takes tens of milliseconds on a busy machine; this takes tens of
// microseconds. /proc stays the fallback where netlink is not allowed.

const (
	netlinkSockDiag  = 4  // NETLINK_SOCK_DIAG
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	nlmFRequest      = 0x1
	nlmFDump         = 0x300
	tcpListen        = 10 // TCP_LISTEN, as a bit number of inet_diag_req_v2.states
	diagMsgLen       = 72 // sizeof(struct inet_diag_msg)
	diagReqLen       = 56 // sizeof(struct inet_diag_req_v2)
)

// diagSockets asks the kernel for the sockets that could serve a connection from local to remote:
// the far end itself (the accepted socket, if any) and every TCP listener on remote's port.
func diagSockets(local, remote netip.AddrPort) ([]socket, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkSockDiag)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	defer syscall.Close(fd)
	var out []socket
	// The far end: the socket whose local address is remote and whose peer is local.
	far, err := diagQuery(fd, familyOf(remote), ^uint32(0), remote, local, false)
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		return nil, err
	}
	out = append(out, far...)
	families := []uint8{syscall.AF_INET, syscall.AF_INET6}
	if !remote.Addr().Unmap().Is4() {
		families = families[1:]
	}
	ls, err := diagListenersOn(fd, remote.Port(), families)
	if err != nil {
		return nil, err
	}
	return append(out, ls...), nil
}

// diagListenersOn asks sock_diag, on fd, for the TCP sockets of families that listen on port.
func diagListenersOn(fd int, port uint16, families []uint8) ([]socket, error) {
	var out []socket
	for _, fam := range families {
		ls, err := diagQuery(fd, fam, 1<<tcpListen, netip.AddrPort{}, netip.AddrPort{}, true)
		if err != nil {
			return nil, err
		}
		for _, s := range ls {
			if s.local.Port() == port {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

func familyOf(ap netip.AddrPort) uint8 {
	if ap.Addr().Is4() {
		return syscall.AF_INET
	}
	return syscall.AF_INET6
}

// diagQuery sends one inet_diag_req_v2 and reads the sockets of the answer: a dump of every
// socket in states, or the one socket with the given ends.
func diagQuery(fd int, family uint8, states uint32, src, dst netip.AddrPort, dump bool) ([]socket, error) {
	req := make([]byte, syscall.NLMSG_HDRLEN+diagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], sockDiagByFamily)
	flags := uint16(nlmFRequest)
	if dump {
		flags |= nlmFDump
	}
	ne.PutUint16(req[6:], flags)
	ne.PutUint32(req[8:], 1) // seq
	r := req[syscall.NLMSG_HDRLEN:]
	r[0], r[1] = family, syscall.IPPROTO_TCP
	ne.PutUint32(r[4:], states)
	if !dump {
		putSockID(r[8:], src, dst)
	}
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	var out []socket
	buf := make([]byte, 32<<10)
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("sock_diag: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("sock_diag: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case syscall.NLMSG_DONE:
				return out, nil
			case syscall.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return nil, fmt.Errorf("sock_diag: %w", errFormat)
				}
				if errno := -int32(ne.Uint32(m.Data)); errno != 0 {
					return nil, fmt.Errorf("sock_diag: %w", syscall.Errno(errno))
				}
				return out, nil
			case sockDiagByFamily:
				s, err := parseDiagMsg(m.Data)
				if err != nil {
					return nil, err
				}
				out = append(out, s)
				if !dump {
					return out, nil
				}
			}
		}
	}
}

// putSockID writes struct inet_diag_sockid for the socket bound to src with peer dst, cookie
// INET_DIAG_NOCOOKIE.
func putSockID(b []byte, src, dst netip.AddrPort) {
	binary.BigEndian.PutUint16(b[0:], src.Port())
	binary.BigEndian.PutUint16(b[2:], dst.Port())
	putAddr(b[4:20], src.Addr())
	putAddr(b[20:36], dst.Addr())
	binary.NativeEndian.PutUint32(b[40:], ^uint32(0))
	binary.NativeEndian.PutUint32(b[44:], ^uint32(0))
}

func putAddr(b []byte, a netip.Addr) {
	if a.Is4() {
		v := a.As4()
		copy(b, v[:])
		return
	}
	v := a.As16()
	copy(b, v[:])
}

// parseDiagMsg reads struct inet_diag_msg.
func parseDiagMsg(b []byte) (socket, error) {
	if len(b) < diagMsgLen {
		return socket{}, fmt.Errorf("sock_diag: a message of %d bytes: %w", len(b), errFormat)
	}
	family, state := b[0], b[1]
	id := b[4:52]
	addr := func(raw []byte) netip.Addr {
		if family == syscall.AF_INET {
			return netip.AddrFrom4([4]byte(raw[:4]))
		}
		return netip.AddrFrom16([16]byte(raw[:16]))
	}
	return socket{
		local:  netip.AddrPortFrom(addr(id[4:20]), binary.BigEndian.Uint16(id[0:])),
		remote: netip.AddrPortFrom(addr(id[20:36]), binary.BigEndian.Uint16(id[2:])),
		state:  state,
		uid:    binary.NativeEndian.Uint32(b[64:]),
		inode:  uint64(binary.NativeEndian.Uint32(b[68:])),
	}, nil
}
