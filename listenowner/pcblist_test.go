package listenowner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"slices"
	"testing"
)

// The fixtures below are laid out byte for byte as XNU's headers define the records of
// net.inet.tcp.pcblist_n (see pcblist.go for the structs and the files they are in), packed to
// 4 bytes, each record padded to 8 as get_pcblist_n pads it.

// XNU's TCP states (bsd/netinet/tcp_fsm.h) and the flags the fixtures set.
const (
	tcpsListen      = 1
	tcpsEstablished = 4
	tcpsTimeWait    = 10
	afINET          = 2      // AF_INET
	in6pV6Only      = 0x8000 // IN6P_IPV6_V6ONLY, in inp_flags
	soAcceptConn    = 0x0002 // SO_ACCEPTCONN, in so_options
	xnuXinpcbLen    = 104    // sizeof(struct xinpcb_n)
	xnuXsocketLen   = 104    // sizeof(struct xsocket_n)
	xnuXsockbufLen  = 32     // sizeof(struct xsockbuf_n)
	xnuXsockstatLen = 136    // sizeof(struct xsockstat_n): 8 + SO_TC_STATS_MAX (4) × 32
	xnuXtcpcbLen    = 204    // sizeof(struct xtcpcb_n)
)

// xnuSock is one socket as XNU lists it.
type xnuSock struct {
	vflag         byte   // inp_vflag: inpIPv4, inpIPv6 or both
	family        uint32 // xso_family: afINET or darwinINET6
	v6only        bool   // IN6P_IPV6_V6ONLY in inp_flags
	local, remote string // "127.0.0.1:41877", "[::1]:41877"
	state         uint32 // t_state, XNU's numbering
	uid           uint32 // so_uid
	so            uint64 // xso_so: 0 for a user-space flow
	noFDRef       bool   // SS_NOFDREF in so_state
}

// listen4 and the like are the sockets the tests list most.
func listen4(addr string, uid uint32) xnuSock {
	return xnuSock{vflag: inpIPv4, family: afINET, local: addr, remote: "0.0.0.0:0", state: tcpsListen, uid: uid, so: 0x1000 + uint64(uid)}
}

func listen6(addr string, uid uint32) xnuSock {
	return xnuSock{vflag: inpIPv6, family: darwinINET6, local: addr, remote: "[::]:0", state: tcpsListen, uid: uid, so: 0x2000 + uint64(uid)}
}

func established(local, remote string, uid uint32, so uint64) xnuSock {
	return xnuSock{vflag: inpIPv4, family: afINET, local: local, remote: remote, state: tcpsEstablished, uid: uid, so: so}
}

// addr16 is the 16 bytes of inp_dependladdr or inp_dependfaddr for a: an in6_addr, or an
// in_addr_4in6 (12 bytes of padding, then the IPv4 address).
func addr16(a netip.Addr) [16]byte {
	if a.Is4() {
		var b [16]byte
		v := a.As4()
		copy(b[12:], v[:])
		return b
	}
	return a.As16()
}

// record is a record of length n and kind kind, padded to 8, with fill writing its fields.
func record(n int, kind uint32, fill func(b []byte)) []byte {
	b := make([]byte, (n+7)&^7)
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(n))
	le.PutUint32(b[4:], kind)
	if fill != nil {
		fill(b)
	}
	return b
}

// xinpgen is the list's head or tail.
func xinpgen(count int) []byte {
	b := make([]byte, xinpgenLen)
	le := binary.LittleEndian
	le.PutUint32(b[0:], xinpgenLen)
	le.PutUint32(b[4:], uint32(count)) // xig_count
	le.PutUint64(b[8:], 77)            // xig_gen
	le.PutUint64(b[16:], 78)           // xig_sogen
	return b
}

func (s xnuSock) inpcb() []byte {
	local, remote := ap(s.local), ap(s.remote)
	return record(xnuXinpcbLen, xsoInPCB, func(b []byte) {
		le := binary.LittleEndian
		le.PutUint64(b[8:], s.so^0xabc) // xi_inpp
		binary.BigEndian.PutUint16(b[16:], remote.Port())
		binary.BigEndian.PutUint16(b[18:], local.Port())
		le.PutUint64(b[20:], s.so^0xdef) // inp_ppcb
		if s.v6only {
			le.PutUint32(b[36:], in6pV6Only) // inp_flags
		}
		b[44] = s.vflag
		b[45] = 64 // inp_ip_ttl
		b[46] = 6  // inp_ip_p: IPPROTO_TCP
		fa, la := addr16(remote.Addr()), addr16(local.Addr())
		copy(b[48:64], fa[:])
		copy(b[64:80], la[:])
	})
}

func (s xnuSock) xsocket() []byte {
	return record(xnuXsocketLen, xsoSocket, func(b []byte) {
		le := binary.LittleEndian
		le.PutUint64(b[8:], s.so)
		le.PutUint16(b[16:], 1) // so_type: SOCK_STREAM
		if s.state == tcpsListen {
			le.PutUint32(b[20:], soAcceptConn)
		}
		state := uint16(0x0002) // SS_ISCONNECTED, for show
		if s.noFDRef {
			state |= ssNoFDRef
		}
		le.PutUint16(b[26:], state)
		le.PutUint32(b[36:], 6) // xso_protocol
		le.PutUint32(b[40:], s.family)
		le.PutUint32(b[64:], s.uid)
		le.PutUint32(b[68:], 4242) // so_last_pid
	})
}

func (s xnuSock) tcpcb() []byte {
	return record(xnuXtcpcbLen, xsoTCPCB, func(b []byte) {
		binary.LittleEndian.PutUint32(b[36:], s.state)
	})
}

// item is a socket's six records, in get_pcblist_n's order.
func (s xnuSock) item() []byte {
	var b []byte
	b = append(b, s.inpcb()...)
	b = append(b, s.xsocket()...)
	b = append(b, record(xnuXsockbufLen, xsoRcvBuf, nil)...)
	b = append(b, record(xnuXsockbufLen, xsoSndBuf, nil)...)
	b = append(b, record(xnuXsockstatLen, xsoStats, nil)...)
	return append(b, s.tcpcb()...)
}

// pcblist is the sysctl's answer for socks: head, items, tail.
func pcblist(socks ...xnuSock) []byte {
	b := xinpgen(len(socks))
	for _, s := range socks {
		b = append(b, s.item()...)
	}
	return append(b, xinpgen(len(socks))...)
}

// rawList is a list of hand-made records between a head and a tail.
func rawList(records ...[]byte) []byte {
	b := xinpgen(len(records))
	for _, r := range records {
		b = append(b, r...)
	}
	return append(b, xinpgen(len(records))...)
}

// TestPCBItemSize: one fixture item is as long as get_pcblist_n's item_size for TCP.
func TestPCBItemSize(t *testing.T) {
	// ROUNDUP64 of xinpcb_n, xsocket_n, 2 × xsockbuf_n, xsockstat_n, xtcpcb_n.
	const want = 104 + 104 + 2*32 + 136 + 208
	if got := len(listen4("127.0.0.1:1", 1).item()); got != want {
		t.Errorf("an item is %d bytes, want %d", got, want)
	}
}

func TestParsePCBList(t *testing.T) {
	const me, other = 501, 502
	mapped := listen4("127.0.0.1:41877", other)
	mapped.family = darwinINET6 // an IPv6 socket bound to ::ffff:127.0.0.1, bound as IPv4
	mappedWild := listen4("0.0.0.0:41877", other)
	mappedWild.family = darwinINET6 // bound to ::ffff:0.0.0.0
	dual := listen6("[::]:41877", other)
	dual.vflag = inpIPv4 | inpIPv6
	v6only := listen6("[::]:41877", other)
	v6only.v6only = true
	queued := established("127.0.0.1:41877", "127.0.0.1:50000", me, 0x3000)
	queued.noFDRef = true
	flow := established("127.0.0.1:41877", "127.0.0.1:50001", 0, 0)
	timeWait := established("127.0.0.1:41877", "127.0.0.1:50002", me, 0x4000)
	timeWait.state, timeWait.noFDRef = tcpsTimeWait, true
	noFamily := listen4("127.0.0.1:41877", other)
	noFamily.vflag = 0

	tests := []struct {
		name  string
		socks []xnuSock
		port  uint16
		want  []socket
	}{
		{name: "no sockets"},
		{name: "an IPv4 listener", socks: []xnuSock{listen4("127.0.0.1:41877", me)},
			want: []socket{{local: ap("127.0.0.1:41877"), remote: ap("0.0.0.0:0"), state: stateListen, uid: me, inode: 0x1000 + me}}},
		{name: "another user's [::1]", socks: []xnuSock{listen6("[::1]:41877", other)},
			want: []socket{{local: ap("[::1]:41877"), remote: ap("[::]:0"), state: stateListen, uid: other, inode: 0x2000 + other, v6only: true}}},
		{name: "a dual-stack [::] takes IPv4", socks: []xnuSock{dual},
			want: []socket{{local: ap("[::]:41877"), remote: ap("[::]:0"), state: stateListen, uid: other, inode: 0x2000 + other}}},
		{name: "a [::] with IPV6_V6ONLY", socks: []xnuSock{v6only},
			want: []socket{{local: ap("[::]:41877"), remote: ap("[::]:0"), state: stateListen, uid: other, inode: 0x2000 + other, v6only: true}}},
		{name: "::ffff:127.0.0.1 is bound as IPv4", socks: []xnuSock{mapped},
			want: []socket{{local: ap("127.0.0.1:41877"), remote: ap("0.0.0.0:0"), state: stateListen, uid: other, inode: 0x1000 + other}}},
		{name: "::ffff:0.0.0.0 stays the IPv6 socket's wildcard", socks: []xnuSock{mappedWild},
			want: []socket{{local: ap("[::ffff:0.0.0.0]:41877"), remote: ap("[::ffff:0.0.0.0]:0"), state: stateListen, uid: other, inode: 0x1000 + other}}},
		{name: "a connection", socks: []xnuSock{established("127.0.0.1:41877", "127.0.0.1:50000", me, 0x3000)},
			want: []socket{{local: ap("127.0.0.1:41877"), remote: ap("127.0.0.1:50000"), state: 1, uid: me, inode: 0x3000}}},
		{name: "a queued connection no file refers to", socks: []xnuSock{queued},
			want: []socket{{local: ap("127.0.0.1:41877"), remote: ap("127.0.0.1:50000"), state: 1, uid: me}}},
		{name: "TIME_WAIT", socks: []xnuSock{timeWait},
			want: []socket{{local: ap("127.0.0.1:41877"), remote: ap("127.0.0.1:50002"), state: 6, uid: me}}},
		{name: "a user-space flow has no owner", socks: []xnuSock{flow},
			want: []socket{{local: ap("127.0.0.1:41877"), remote: ap("127.0.0.1:50001"), state: 1, unowned: true}}},
		{name: "a pcb of neither family is left out", socks: []xnuSock{noFamily}},
		{name: "only the port asked for", port: 41877,
			socks: []xnuSock{listen4("127.0.0.1:41878", other), listen4("127.0.0.1:41877", me), established("127.0.0.1:50000", "127.0.0.1:41877", me, 0x5000)},
			want:  []socket{{local: ap("127.0.0.1:41877"), remote: ap("0.0.0.0:0"), state: stateListen, uid: me, inode: 0x1000 + me}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePCBList(pcblist(tt.socks...), tt.port)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %+v,\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestParsePCBListPassesOver: records of kinds the package does not read, known or not, are
// passed over wherever they stand in an item.
func TestParsePCBListPassesOver(t *testing.T) {
	s := listen4("127.0.0.1:41877", 502)
	unknown := record(40, 0x400, nil)
	b := rawList(unknown, s.inpcb(), unknown, s.xsocket(), record(xnuXsockstatLen, xsoStats, nil), unknown, s.tcpcb(), unknown)
	got, err := parsePCBList(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].uid != 502 || got[0].local != ap("127.0.0.1:41877") {
		t.Errorf("got %+v, want the one listener", got)
	}
}

// TestParsePCBListRefuses: a list that does not hold together is refused whole, with an error
// that wraps errPCBFormat; none makes the parser read past its buffer.
func TestParsePCBListRefuses(t *testing.T) {
	s := listen4("127.0.0.1:41877", 502)
	le := binary.LittleEndian
	withLen := func(r []byte, n uint32) []byte {
		r = slices.Clone(r)
		le.PutUint32(r, n)
		return r
	}
	badState := s
	badState.state = 11
	head := xinpgen(1)
	tests := []struct {
		name string
		b    []byte
	}{
		{"nothing", nil},
		{"shorter than the head", head[:20]},
		{"a head of length 0", append(withLen(head, 0), pcblist()[xinpgenLen:]...)},
		{"a head longer than the list", withLen(pcblist(), 1000)},
		{"no tail", pcblist(s)[:len(pcblist(s))-xinpgenLen]},
		{"a record of length 0", rawList(withLen(s.inpcb(), 0))},
		{"a record of length 4", rawList(withLen(s.inpcb(), 4))},
		{"a record running past the list", rawList(s.inpcb(), s.xsocket(), withLen(s.tcpcb(), 1<<20))},
		{"a record of length 2^32-1", rawList(withLen(s.inpcb(), 0xffffffff))},
		{"a pcb too short for its addresses", rawList(withLen(s.inpcb(), 72), s.xsocket(), s.tcpcb())},
		{"a socket record too short for so_uid", rawList(s.inpcb(), withLen(s.xsocket(), 64), s.tcpcb())},
		{"a TCP block too short for t_state", rawList(s.inpcb(), s.xsocket(), withLen(s.tcpcb(), 36))},
		{"a socket record before its pcb", rawList(s.xsocket(), s.inpcb(), s.tcpcb())},
		{"a TCP block before its pcb", rawList(s.tcpcb(), s.inpcb(), s.xsocket(), s.tcpcb())},
		{"a TCP block without its socket record", rawList(s.inpcb(), s.tcpcb())},
		{"two pcbs in one item", rawList(s.inpcb(), s.inpcb(), s.xsocket(), s.tcpcb())},
		{"two socket records in one item", rawList(s.inpcb(), s.xsocket(), s.xsocket(), s.tcpcb())},
		{"the tail inside an item", rawList(s.inpcb(), s.xsocket())},
		{"a state XNU does not have", pcblist(badState)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePCBList(tt.b, 0)
			if !errors.Is(err, errPCBFormat) {
				t.Errorf("got %+v, %v; want an error that wraps errPCBFormat", got, err)
			}
		})
	}
	// Cut short anywhere, a good list is refused: what is missing could be a listener.
	full := pcblist(listen4("0.0.0.0:41877", 501), s, established("127.0.0.1:41877", "127.0.0.1:50000", 502, 9))
	for n := range len(full) {
		if _, err := parsePCBList(full[:n], 0); !errors.Is(err, errPCBFormat) {
			t.Fatalf("the list cut to %d of its %d bytes: %v, want an error that wraps errPCBFormat", n, len(full), err)
		}
	}
}

// TestPCBOwner: who Check finds behind a connection, from macOS's list, as the kernel would hand
// the connection over (in_pcblookup_hash_locked): the held far end, else the listener on the
// address itself, then 0.0.0.0, then an IPv6 socket's wildcard.
func TestPCBOwner(t *testing.T) {
	// uidOf prefers, among listeners that tie, one that is not this process's user's.
	me := uint32(os.Getuid())
	other := me + 1
	client4, server4 := "127.0.0.1:50000", "127.0.0.1:41877"
	client6, server6 := "[::1]:50000", "[::1]:41877"
	dual := listen6("[::]:41877", other)
	dual.vflag = inpIPv4 | inpIPv6
	v6only := listen6("[::]:41877", other)
	v6only.v6only = true
	mapped := listen4("127.0.0.1:41877", other)
	mapped.family = darwinINET6
	mappedWild := listen4("0.0.0.0:41877", other)
	mappedWild.family = darwinINET6
	queued := established(server4, client4, other, 0x3000)
	queued.noFDRef = true
	flowListener := listen4("127.0.0.1:41877", 0)
	flowListener.so = 0

	tests := []struct {
		name           string
		socks          []xnuSock
		client, server string
		want           uint32
		err            error
	}{
		{name: "my listener", client: client4, server: server4,
			socks: []xnuSock{listen4(server4, me), established(client4, server4, me, 7)}, want: me},
		{name: "another user's listener", client: client4, server: server4,
			socks: []xnuSock{listen4(server4, other), established(client4, server4, me, 7)}, want: other},
		{name: "another user's 0.0.0.0", client: client4, server: server4,
			socks: []xnuSock{listen4("0.0.0.0:41877", other)}, want: other},
		{name: "the address itself before 0.0.0.0", client: client4, server: server4,
			socks: []xnuSock{listen4("0.0.0.0:41877", other), listen4(server4, me)}, want: me},
		{name: "::ffff:127.0.0.1 is the address itself", client: client4, server: server4,
			socks: []xnuSock{listen4("0.0.0.0:41877", me), mapped}, want: other},
		{name: "0.0.0.0 before a dual-stack [::]", client: client4, server: server4,
			socks: []xnuSock{dual, listen4("0.0.0.0:41877", me)}, want: me},
		{name: "0.0.0.0 before ::ffff:0.0.0.0", client: client4, server: server4,
			socks: []xnuSock{mappedWild, listen4("0.0.0.0:41877", me)}, want: me},
		{name: "a dual-stack [::] alone serves IPv4", client: client4, server: server4,
			socks: []xnuSock{dual}, want: other},
		{name: "::ffff:0.0.0.0 alone serves IPv4", client: client4, server: server4,
			socks: []xnuSock{mappedWild}, want: other},
		{name: "a [::] with IPV6_V6ONLY does not serve IPv4", client: client4, server: server4,
			socks: []xnuSock{v6only}, err: ErrNoListener},
		{name: "another user's [::1]", client: client6, server: server6,
			socks: []xnuSock{listen6(server6, other), listen6("[::]:41877", me)}, want: other},
		{name: "[::] serves [::1]", client: client6, server: server6,
			socks: []xnuSock{v6only}, want: other},
		{name: "no IPv4 listener serves [::1]", client: client6, server: server6,
			socks: []xnuSock{listen4("0.0.0.0:41877", other), mapped}, err: ErrNoListener},
		{name: "nothing listens", client: client4, server: server4,
			socks: []xnuSock{listen4("127.0.0.1:41878", me)}, err: ErrNoListener},
		{name: "the held far end before the listener", client: client4, server: server4,
			socks: []xnuSock{listen4(server4, me), established(server4, client4, other, 8)}, want: other},
		{name: "a queued far end is its listener's", client: client4, server: server4,
			socks: []xnuSock{listen4(server4, me), queued}, want: me},
		{name: "listeners that tie: the other user's", client: client4, server: server4,
			socks: []xnuSock{listen4(server4, me), listen4(server4, other)}, want: other},
		{name: "a user-space flow proves no owner", client: client4, server: server4,
			socks: []xnuSock{listen4("0.0.0.0:41877", me), flowListener}, err: ErrNoOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sockets, err := parsePCBList(pcblist(tt.socks...), ap(tt.server).Port())
			if err != nil {
				t.Fatal(err)
			}
			got, err := pcbOwner(sockets, ap(tt.client), ap(tt.server))
			if tt.err != nil {
				if !errors.Is(err, tt.err) || got != -1 {
					t.Errorf("got uid %d, %v; want -1 and an error that wraps %v", got, err, tt.err)
				}
				return
			}
			if err != nil || got != int(tt.want) {
				t.Errorf("got uid %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestPCBFarEndHeld(t *testing.T) {
	client, server := "127.0.0.1:50000", "127.0.0.1:41877"
	closed := established(client, server, 501, 7)
	closed.noFDRef = true
	for _, tt := range []struct {
		name  string
		socks []xnuSock
		want  bool
	}{
		{"held, half-closed or not", []xnuSock{established(client, server, 501, 7)}, true},
		{"closed: no file refers to it", []xnuSock{closed}, false},
		{"gone", []xnuSock{listen4(server, 501)}, false},
		{"another connection's", []xnuSock{established("127.0.0.1:50001", server, 501, 7)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The server asks about its accepted connection: its local end is the server's address.
			sockets, err := parsePCBList(pcblist(tt.socks...), ap(client).Port())
			if err != nil {
				t.Fatal(err)
			}
			if got := pcbFarEndHeld(sockets, ap(server), ap(client)); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func FuzzParsePCBList(f *testing.F) {
	dual := listen6("[::]:41877", 502)
	dual.vflag = inpIPv4 | inpIPv6
	f.Add(pcblist(), uint16(0))
	f.Add(pcblist(listen4("127.0.0.1:41877", 501), dual, established("127.0.0.1:41877", "127.0.0.1:50000", 501, 3)), uint16(41877))
	f.Add(pcblist(listen6("[::1]:41877", 502)), uint16(0))
	f.Add(rawList(listen4("127.0.0.1:1", 1).inpcb(), record(40, 0x400, nil)), uint16(0))
	f.Fuzz(func(t *testing.T, b []byte, port uint16) {
		sockets, err := parsePCBList(b, port)
		if err != nil {
			if !errors.Is(err, errPCBFormat) {
				t.Fatalf("got error %v, want one that wraps errPCBFormat", err)
			}
			return
		}
		for _, s := range sockets {
			if s.local.Addr().BitLen() != s.remote.Addr().BitLen() {
				t.Fatalf("got %+v: the two addresses are of different families", s)
			}
			if port != 0 && s.local.Port() != port {
				t.Fatalf("got %+v, on another port than %d", s, port)
			}
			if s.unowned && s.inode != 0 {
				t.Fatalf("got %+v: a socket with no handle that a process holds", s)
			}
		}
		// A list that reads leaves the owner lookup no way to fail but its own.
		if _, err := pcbOwner(sockets, ap("127.0.0.1:50000"), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), max(port, 1))); err != nil &&
			!errors.Is(err, ErrNoListener) && !errors.Is(err, ErrNoOwner) {
			t.Fatalf("pcbOwner: %v", err)
		}
	})
}

// BenchmarkParsePCBList: reading macOS's list of a busy machine's sockets (30,000 in TIME_WAIT
// and one listener), beside the baseline of reading the same sockets from Linux's /proc/net/tcp
// text (readTable, the Linux fallback), both for one port. It measures the parser alone: the
// sysctl's own cost is a Mac's, not measured here.
func BenchmarkParsePCBList(b *testing.B) {
	const n = 30000
	socks := []xnuSock{listen4("127.0.0.1:41877", 501)}
	lines := []socket{{local: ap("127.0.0.1:41877"), remote: ap("0.0.0.0:0"), state: stateListen, uid: 501, inode: 9}}
	for i := range n {
		local := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(20000+i%20000))
		remote := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(40000+i/20000))
		tw := established(local.String(), remote.String(), 501, 0)
		tw.state, tw.noFDRef = tcpsTimeWait, true
		socks = append(socks, tw)
		lines = append(lines, socket{local: local, remote: remote, state: 6, uid: 501})
	}
	list := pcblist(socks...)
	var text bytes.Buffer
	if err := writeTable(&text, lines, binary.LittleEndian); err != nil {
		b.Fatal(err)
	}
	b.Run("pcblist_n", func(b *testing.B) {
		b.SetBytes(int64(len(list)))
		for b.Loop() {
			if s, err := parsePCBList(list, 41877); err != nil || len(s) != 1 {
				b.Fatalf("%d sockets, %v", len(s), err)
			}
		}
	})
	b.Run("baseline /proc/net/tcp", func(b *testing.B) {
		b.SetBytes(int64(text.Len()))
		for b.Loop() {
			if s, err := readTable(bytes.NewReader(text.Bytes()), binary.LittleEndian, 41877); err != nil || len(s) != 1 {
				b.Fatalf("%d sockets, %v", len(s), err)
			}
		}
	})
}
