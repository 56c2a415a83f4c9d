package listenowner

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

// stateListen is TCP_LISTEN in /proc/net/tcp's st column (include/net/tcp_states.h).
const stateListen = 0x0A

// socket is one line of /proc/net/tcp or /proc/net/tcp6.
type socket struct {
	local, remote netip.AddrPort
	state         uint8
	uid           uint32
	// inode is the socket's inode, 0 when no process holds it: a connection waiting in its
	// listener's queue, one closed (TIME_WAIT and the like), or a SYN_RECV request. The uid of
	// such a line is not its owner's: kernels before 6.16 show 0 for a socket no process holds.
	// On macOS it is the socket's handle in the kernel's list (pcblist.go), 0 likewise.
	inode uint64
	// v6only is true for an IPv6 listener known to take no IPv4 connection (IPV6_V6ONLY). Linux's
	// tables do not show it, and leave it false; macOS's do (pcblist.go).
	v6only bool
	// unowned is true for a socket whose uid proves nothing: a flow of a user-space network
	// stack in macOS's list, which records no owner (pcblist.go).
	unowned bool
}

// errFormat is wrapped by every error about a table that cannot be read: the kernel's format is
// not what this package knows, so it cannot say who listens.
var errFormat = errors.New("not in the format of /proc/net/tcp")

// readTable reads a /proc/net/tcp or /proc/net/tcp6: a header line, then one socket a line.
// order is the byte order the kernel printed addresses in, the host's own (binary.NativeEndian).
// With port other than 0, it keeps only the sockets whose local port is port, and skips the
// others unparsed: a busy host has tens of thousands of lines, mostly TIME_WAIT.
func readTable(r io.Reader, order binary.ByteOrder, port uint16) ([]socket, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<10) // reads of 64 KiB: fewer trips into the kernel
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("no header line: %w", errFormat)
	}
	if f := strings.Fields(sc.Text()); len(f) == 0 || f[0] != "sl" {
		return nil, fmt.Errorf("the header line does not start with sl: %w", errFormat)
	}
	var sockets []socket
	for n := 2; sc.Scan(); n++ {
		if p, ok := localPort(sc.Bytes()); ok && port != 0 && p != port {
			continue
		}
		s, err := parseLine(sc.Text(), order)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		sockets = append(sockets, s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return sockets, nil
}

// localPort is the port of a line's local address (its second field), found without parsing the
// line; ok is false when the line does not start as the kernel's do (blanks and printable ASCII,
// the field ending in a colon and 4 hex digits), and the line is left to parseLine to judge.
func localPort(line []byte) (port uint16, ok bool) {
	i := 0
	for range 2 { // the slot, then the local address, each after blanks
		for i < len(line) && line[i] == ' ' {
			i++
		}
		for ; i < len(line) && line[i] != ' '; i++ {
			if line[i] < '!' || line[i] > '~' {
				return 0, false // a tab or other blank that strings.Fields would split at
			}
		}
	}
	if i < 5 || line[i-5] != ':' {
		return 0, false
	}
	for _, c := range line[i-4 : i] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		default:
			return 0, false
		}
		port = port<<4 | uint16(d)
	}
	return port, true
}

// parseLine reads one socket line, such as (from /proc/net/tcp, little-endian)
//
//	0: 0100007F:A3B5 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000  0 81234 1 …
//
// Fields: slot, local address, remote address, state, tx:rx queue, timer, retransmits, uid,
// timeout, inode, then more that this package does not read. An address is the IP as 32-bit words each printed in
// order (8 hex digits for IPv4, 32 for IPv6), a colon, and the port as 4 hex digits.
func parseLine(line string, order binary.ByteOrder) (socket, error) {
	f := strings.Fields(line)
	if len(f) < 10 {
		return socket{}, fmt.Errorf("%d fields, want at least 10: %w", len(f), errFormat)
	}
	if slot, ok := strings.CutSuffix(f[0], ":"); !ok || !decimal(slot) {
		return socket{}, fmt.Errorf("the slot is not a number and a colon: %w", errFormat)
	}
	var s socket
	var err error
	if s.local, err = parseAddrPort(f[1], order); err != nil {
		return socket{}, fmt.Errorf("local address: %w", err)
	}
	if s.remote, err = parseAddrPort(f[2], order); err != nil {
		return socket{}, fmt.Errorf("remote address: %w", err)
	}
	if s.local.Addr().BitLen() != s.remote.Addr().BitLen() {
		return socket{}, fmt.Errorf("the local and remote addresses are of different families: %w", errFormat)
	}
	if len(f[3]) != 2 {
		return socket{}, fmt.Errorf("the state is not 2 hex digits: %w", errFormat)
	}
	st, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil {
		return socket{}, fmt.Errorf("the state is not 2 hex digits: %w", errFormat)
	}
	s.state = uint8(st)
	if !decimal(f[7]) {
		return socket{}, fmt.Errorf("the uid is not a number: %w", errFormat)
	}
	uid, err := strconv.ParseUint(f[7], 10, 32)
	if err != nil {
		return socket{}, fmt.Errorf("the uid is out of range: %w", errFormat)
	}
	s.uid = uint32(uid)
	if !decimal(f[9]) {
		return socket{}, fmt.Errorf("the inode is not a number: %w", errFormat)
	}
	if s.inode, err = strconv.ParseUint(f[9], 10, 64); err != nil {
		return socket{}, fmt.Errorf("the inode is out of range: %w", errFormat)
	}
	return s, nil
}

// parseAddrPort reads "0100007F:A3B5" or the same with a 32-digit IPv6 address.
func parseAddrPort(s string, order binary.ByteOrder) (netip.AddrPort, error) {
	host, port, ok := strings.Cut(s, ":")
	if !ok || len(port) != 4 || !hex(port) || (len(host) != 8 && len(host) != 32) || !hex(host) {
		return netip.AddrPort{}, fmt.Errorf("not hex words, a colon and a 4-digit hex port: %w", errFormat)
	}
	p, _ := strconv.ParseUint(port, 16, 16) // 4 hex digits always fit
	var b [16]byte
	for i := 0; i < len(host)/8; i++ {
		w, _ := strconv.ParseUint(host[8*i:8*i+8], 16, 32) // 8 hex digits always fit
		order.PutUint32(b[4*i:], uint32(w))
	}
	if len(host) == 8 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(p)), nil
	}
	return netip.AddrPortFrom(netip.AddrFrom16(b), uint16(p)), nil
}

// hex reports whether s is all hex digits; strconv alone would also take a sign or underscores.
func hex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// decimal reports whether s is all decimal digits.
func decimal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
