package listenowner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// macOS lists its TCP sockets in the net.inet.tcp.pcblist_n sysctl, which is what netstat reads.
// This file reads that list; owner_darwin.go asks for it. It builds on every system, so that its
// tests run on Linux from byte fixtures.
//
// The layout is XNU's (apple-oss-distributions/xnu, xnu-8019 for macOS 12, the oldest Go 1.26
// runs on, to xnu-11417), from get_pcblist_n in bsd/netinet/in_pcblist.c:
//
//	struct xinpgen                           the list's head: xig_len, xig_count, xig_gen, xig_sogen
//	then for each socket, one "item" of records, each padded to a multiple of 8 (ROUNDUP64):
//	  struct xinpcb_n     (XSO_INPCB)        ports, addresses, inp_vflag, inp_flags
//	  struct xsocket_n    (XSO_SOCKET)       so_state, xso_family, so_uid
//	  struct xsockbuf_n   (XSO_RCVBUF, then XSO_SNDBUF)
//	  struct xsockstat_n  (XSO_STATS)
//	  struct xtcpcb_n     (XSO_TCPCB)        t_state
//	struct xinpgen                           the list's tail, once more
//
// Every record starts with its length and its kind (xi_len and xi_kind, xso_len and xso_kind, and
// so on), both u_int32_t; the structs are packed to 4 bytes (#pragma pack(4) in
// bsd/netinet/in_pcb.h, bsd/sys/socketvar.h and bsd/netinet/tcp_var.h). The list is read as
// netstat reads it: record after record by its length, rounded up to 8, each by its kind, until a
// record no longer than struct xinpgen, which is the tail. Every Mac is little-endian (x86-64 and
// arm64), as the kernel writes these.
//
// An item may also stand for a flow of a user-space network stack rather than a kernel socket
// (bsd/net/ntstat.c, nstat_userland_list_snapshot): its xsocket_n carries no socket handle
// (xso_so is 0) and no owner (so_uid is 0). Such a record is kept, marked unowned: it proves no
// one's ownership of anything.

// The kinds of record (bsd/sys/socketvar.h).
const (
	xsoSocket = 0x001 // XSO_SOCKET
	xsoRcvBuf = 0x002 // XSO_RCVBUF
	xsoSndBuf = 0x004 // XSO_SNDBUF
	xsoStats  = 0x008 // XSO_STATS
	xsoInPCB  = 0x010 // XSO_INPCB
	xsoTCPCB  = 0x020 // XSO_TCPCB
)

// Sizes and offsets of what this file reads, in the packed structs.
const (
	// sizeof(struct xinpgen): u_int32_t xig_len, u_int xig_count, inp_gen_t xig_gen (u_quad_t),
	// so_gen_t xig_sogen (u_quad_t). A record this short or shorter is the tail.
	xinpgenLen = 24

	// struct xinpcb_n (bsd/netinet/in_pcb.h): xi_len 0, xi_kind 4, xi_inpp 8, inp_fport 16,
	// inp_lport 18 (both in network byte order), inp_ppcb 20, inp_gencnt 28, inp_flags 36,
	// inp_flow 40, inp_vflag 44, inp_ip_ttl 45, inp_ip_p 46, then inp_dependfaddr at 48 and
	// inp_dependladdr at 64, each a union of struct in6_addr and struct in_addr_4in6 (three
	// u_int32_t of padding, then the struct in_addr: the IPv4 address is the last 4 bytes).
	inpFport     = 16
	inpLport     = 18
	inpVflag     = 44
	inpFaddr     = 48
	inpLaddr     = 64
	xinpcbMinLen = 80 // through inp_dependladdr

	// struct xsocket_n (bsd/sys/socketvar.h): xso_len 0, xso_kind 4, xso_so 8, so_type 16,
	// so_options 20, so_linger 24, so_state 26 (short), so_pcb 28, xso_protocol 36, xso_family
	// 40, so_qlen 44, so_incqlen 46, so_qlimit 48, so_timeo 50, so_error 52, so_pgid 56,
	// so_oobmark 60, so_uid 64.
	xsoSo         = 8
	xsoState      = 26
	xsoFamily     = 40
	xsoUID        = 64
	xsocketMinLen = 68 // through so_uid

	// struct xtcpcb_n (bsd/netinet/tcp_var.h): xt_len 0, xt_kind 4, t_segq 8, t_dupacks 16,
	// t_timer[TCPT_NTIMERS_EXT = 4] 20, t_state 36.
	xtState      = 36
	xtcpcbMinLen = 40 // through t_state
)

const (
	inpIPv4     = 0x1    // INP_IPV4, in inp_vflag (bsd/netinet/in_pcb.h)
	inpIPv6     = 0x2    // INP_IPV6
	ssNoFDRef   = 0x0001 // SS_NOFDREF, in so_state: no file refers to the socket (bsd/sys/socketvar.h)
	darwinINET6 = 30     // AF_INET6 on macOS (bsd/sys/socket.h)
)

// darwinStates maps XNU's TCP states (bsd/netinet/tcp_fsm.h: TCPS_CLOSED 0 … TCPS_TIME_WAIT 10)
// to Linux's numbering (include/net/tcp_states.h), which socket.state holds.
var darwinStates = [...]uint8{
	0:  7,           // TCPS_CLOSED: TCP_CLOSE
	1:  stateListen, // TCPS_LISTEN
	2:  2,           // TCPS_SYN_SENT
	3:  3,           // TCPS_SYN_RECEIVED: TCP_SYN_RECV
	4:  1,           // TCPS_ESTABLISHED
	5:  8,           // TCPS_CLOSE_WAIT
	6:  4,           // TCPS_FIN_WAIT_1
	7:  11,          // TCPS_CLOSING
	8:  9,           // TCPS_LAST_ACK
	9:  5,           // TCPS_FIN_WAIT_2
	10: 6,           // TCPS_TIME_WAIT
}

// errPCBFormat is wrapped by every error about a list that cannot be read: it is not laid out as
// this package knows XNU lays it out, so it says nothing about who listens.
var errPCBFormat = errors.New("not in the format of net.inet.tcp.pcblist_n")

// pcbItem is one socket's records as they arrive.
type pcbItem struct {
	inpcb, xsocket, tcpcb []byte
}

// parsePCBList reads the net.inet.tcp.pcblist_n list in b, keeping the sockets whose local port
// is port (all of them when port is 0). It refuses a list that does not hold together: a record
// shorter than the fields read from it or running past the end, an item that lacks its pcb, its
// socket or its TCP block, or has two of one, and a list with no tail (cut short). Records of
// other kinds are passed over, as netstat passes them.
func parsePCBList(b []byte, port uint16) ([]socket, error) {
	le := binary.LittleEndian
	if len(b) < xinpgenLen {
		return nil, fmt.Errorf("%d bytes, shorter than its head: %w", len(b), errPCBFormat)
	}
	headLen := le.Uint32(b)
	if headLen < xinpgenLen || uint64(headLen) > uint64(len(b)) {
		return nil, fmt.Errorf("a head of %d bytes in %d: %w", headLen, len(b), errPCBFormat)
	}
	var out []socket
	var item pcbItem
	open := false
	for off := roundup8(uint64(headLen)); ; {
		if off+8 > uint64(len(b)) {
			return nil, fmt.Errorf("the list ends at byte %d without its tail: %w", off, errPCBFormat)
		}
		n, kind := uint64(le.Uint32(b[off:])), le.Uint32(b[off+4:])
		if n <= xinpgenLen {
			if n < 8 || off+n > uint64(len(b)) {
				return nil, fmt.Errorf("a record of %d bytes at byte %d: %w", n, off, errPCBFormat)
			}
			if open {
				return nil, fmt.Errorf("the list ends inside a socket's records: %w", errPCBFormat)
			}
			return out, nil // the tail
		}
		if off+n > uint64(len(b)) {
			return nil, fmt.Errorf("a record of %d bytes at byte %d runs past the list's %d: %w", n, off, len(b), errPCBFormat)
		}
		rec := b[off : off+n]
		switch kind {
		case xsoInPCB:
			if open {
				return nil, fmt.Errorf("a pcb at byte %d inside another socket's records: %w", off, errPCBFormat)
			}
			if n < xinpcbMinLen {
				return nil, fmt.Errorf("a pcb of %d bytes, want at least %d: %w", n, xinpcbMinLen, errPCBFormat)
			}
			item, open = pcbItem{inpcb: rec}, true
		case xsoSocket, xsoTCPCB:
			if !open {
				return nil, fmt.Errorf("a record of kind %#x at byte %d before its pcb: %w", kind, off, errPCBFormat)
			}
			if kind == xsoSocket {
				if item.xsocket != nil || n < xsocketMinLen {
					return nil, fmt.Errorf("a socket record of %d bytes at byte %d, or a second: %w", n, off, errPCBFormat)
				}
				item.xsocket = rec
				break
			}
			if n < xtcpcbMinLen {
				return nil, fmt.Errorf("a TCP block of %d bytes, want at least %d: %w", n, xtcpcbMinLen, errPCBFormat)
			}
			if item.xsocket == nil {
				return nil, fmt.Errorf("a socket's records at byte %d without its socket record: %w", off, errPCBFormat)
			}
			item.tcpcb = rec
			s, keep, err := item.socket(port)
			if err != nil {
				return nil, fmt.Errorf("the socket at byte %d: %w", off, err)
			}
			if keep {
				out = append(out, s)
			}
			open = false
		default:
			// XSO_RCVBUF, XSO_SNDBUF, XSO_STATS, and kinds this package does not know.
		}
		off += roundup8(n)
	}
}

// roundup8 is ROUNDUP64: n rounded up to a multiple of 8, the step from one record to the next.
func roundup8(n uint64) uint64 { return (n + 7) &^ 7 }

// socket makes a socket of one item's records; keep is false for one not on port (when port is
// not 0), or one of neither family, which no lookup of the kernel's would pick.
func (it pcbItem) socket(port uint16) (socket, bool, error) {
	le := binary.LittleEndian
	p, x, t := it.inpcb, it.xsocket, it.tcpcb
	lport := binary.BigEndian.Uint16(p[inpLport:])
	if port != 0 && lport != port {
		return socket{}, false, nil
	}
	state := le.Uint32(t[xtState:])
	if state >= uint32(len(darwinStates)) {
		return socket{}, false, fmt.Errorf("TCP state %d: %w", state, errPCBFormat)
	}
	s := socket{
		state: darwinStates[state],
		uid:   le.Uint32(x[xsoUID:]),
		// The socket's handle stands for Linux's inode: a number the socket keeps, 0 when no
		// process holds the socket: one closed (soclose sets SS_NOFDREF), or one waiting in its
		// listener's queue (sonewconn sets it, soaccept clears it; bsd/kern/uipc_socket2.c and
		// bsd/kern/uipc_socket.c).
		inode: le.Uint64(x[xsoSo:]),
	}
	if s.inode == 0 {
		s.unowned = true
	}
	if le.Uint16(x[xsoState:])&ssNoFDRef != 0 {
		s.inode = 0
	}
	fport := binary.BigEndian.Uint16(p[inpFport:])
	laddr, faddr := [16]byte(p[inpLaddr:inpLaddr+16]), [16]byte(p[inpFaddr:inpFaddr+16])
	switch vflag := p[inpVflag]; {
	case vflag&inpIPv6 != 0:
		// An IPv6 socket. It takes IPv4 connections too when INP_IPV4 is set beside (bound to
		// [::] without IPV6_V6ONLY: tcp6_usr_bind and tcp6_usr_listen in
		// bsd/netinet/tcp_usrreq.c), and never otherwise.
		s.local = netip.AddrPortFrom(netip.AddrFrom16(laddr), lport)
		s.remote = netip.AddrPortFrom(netip.AddrFrom16(faddr), fport)
		s.v6only = vflag&inpIPv4 == 0
	case vflag&inpIPv4 != 0:
		// An IPv4 socket, or an IPv6 one bound to a v4-mapped address, which XNU binds as IPv4.
		s.local = netip.AddrPortFrom(netip.AddrFrom4([4]byte(laddr[12:])), lport)
		s.remote = netip.AddrPortFrom(netip.AddrFrom4([4]byte(faddr[12:])), fport)
		if s.local.Addr() == netip.IPv4Unspecified() && le.Uint32(x[xsoFamily:]) == darwinINET6 {
			// An IPv6 socket bound to ::ffff:0.0.0.0: the kernel's IPv4 lookup takes it only
			// when no IPv4 socket listens on the wildcard (in_pcblookup_hash_locked in
			// bsd/netinet/in_pcb.c, local_wild_mapped), as listenRank ranks this address.
			s.local = netip.AddrPortFrom(netip.AddrFrom16(netip.IPv4Unspecified().As16()), lport)
			s.remote = netip.AddrPortFrom(netip.AddrFrom16(s.remote.Addr().As16()), fport)
		}
	default:
		return socket{}, false, nil
	}
	return s, true, nil
}

// pcbOwner is the uid that owns the socket serving a connection from local to remote, among the
// sockets of macOS's list on remote's port, as Check decides it. A socket that serves it but has
// no owner in the list (unowned) is ErrNoOwner: the token is not sent on a guess.
func pcbOwner(sockets []socket, local, remote netip.AddrPort) (int, error) {
	found := servers(sockets, local, remote)
	if len(found) == 0 {
		return -1, fmt.Errorf("%w at %s in net.inet.tcp.pcblist_n", ErrNoListener, remote)
	}
	for _, s := range found {
		if s.unowned {
			return -1, fmt.Errorf("the socket serving %s: %w (a flow of a user-space network stack)", remote, ErrNoOwner)
		}
	}
	return uidOf(found), nil
}

// pcbFarEndHeld reports whether a process holds the far end of a connection from local to
// remote, among the sockets of macOS's list on remote's port: false when the socket is gone, or
// no file refers to it any more (SS_NOFDREF).
func pcbFarEndHeld(sockets []socket, local, remote netip.AddrPort) bool {
	for _, s := range sockets {
		if s.state != stateListen && unmap(s.local) == remote && unmap(s.remote) == local {
			return s.inode != 0
		}
	}
	return false
}
