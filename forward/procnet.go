package forward

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// socket is one line of the host's /proc/net/tcp or /proc/net/tcp6.
type socket struct {
	Local  netip.AddrPort
	Remote netip.AddrPort
	State  uint8 // 0x0A is listening
	UID    uint32
	Inode  uint64
}

const tcpListen = 0x0A

// parseProcNetTCP reads the lines of /proc/net/tcp and /proc/net/tcp6 (either or both, one after
// the other, headers included) and returns the sockets of the lines it understands. Other lines
// (headers, a chatty shell's start-up output) are skipped.
//
// The kernel prints each 32-bit word of an address as a hexadecimal number in the host's byte
// order. This reads them as little-endian, the order of every platform krad installs its CLI on
// (amd64, arm64).
func parseProcNetTCP(data []byte) []socket {
	var out []socket
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 512), 64*1024)
	for sc.Scan() {
		if s, ok := parseProcNetTCPLine(sc.Text()); ok {
			out = append(out, s)
		}
	}
	return out
}

// parseProcNetTCPLine parses one line:
//
//	0: 0100007F:A0E5 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000  0 40238856 1 …
//
// sl, local address, remote address, state, queues, timer, retransmits, uid, timeout, inode.
func parseProcNetTCPLine(line string) (socket, bool) {
	f := strings.Fields(line)
	if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
		return socket{}, false
	}
	if _, err := strconv.ParseUint(f[0][:len(f[0])-1], 10, 64); err != nil {
		return socket{}, false
	}
	local, ok := parseHexAddrPort(f[1])
	if !ok {
		return socket{}, false
	}
	remote, ok := parseHexAddrPort(f[2])
	if !ok {
		return socket{}, false
	}
	state, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil || len(f[3]) != 2 {
		return socket{}, false
	}
	uid, err := strconv.ParseUint(f[7], 10, 32)
	if err != nil {
		return socket{}, false
	}
	inode, err := strconv.ParseUint(f[9], 10, 64)
	if err != nil {
		return socket{}, false
	}
	return socket{Local: local, Remote: remote, State: uint8(state), UID: uint32(uid), Inode: inode}, true
}

// parseHexAddrPort parses "0100007F:A0E5" (IPv4) or 32 hex digits and a port (IPv6).
func parseHexAddrPort(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(p) != 4 || (len(a) != 8 && len(a) != 32) {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.AddrPort{}, false
	}
	// Each 32-bit word is little-endian: reverse the bytes of each.
	for w := 0; w+4 <= len(raw); w += 4 {
		raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr, uint16(port)), true
}

// inodes are the inodes of the sockets a process holds.
type inodes map[uint64]bool

// parseFDs reads ls -l /proc/PID/fd, whose socket lines end in "-> socket:[INODE]", and returns
// the inodes of the sockets, or nil when there is none: the descriptors were not readable (a
// non-dumpable sshd, another user's process), since the process of a live session always holds
// its connection's socket.
func parseFDs(ls []byte) inodes {
	var out inodes
	for _, line := range bytes.Split(ls, []byte("\n")) {
		_, rest, ok := bytes.Cut(line, []byte(" -> socket:["))
		if !ok {
			continue
		}
		n, ok := bytes.CutSuffix(bytes.TrimRight(rest, "\r"), []byte("]"))
		if !ok {
			continue
		}
		inode, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil {
			continue
		}
		if out == nil {
			out = inodes{}
		}
		out[inode] = true
	}
	return out
}

// listeners returns the listening sockets on port.
func listeners(socks []socket, port int) []socket {
	var out []socket
	for _, s := range socks {
		if s.State == tcpListen && int(s.Local.Port()) == port {
			out = append(out, s)
		}
	}
	return out
}

// isLoopback says whether a is a loopback address: 127.0.0.0/8, ::1, or ::ffff:127.x.x.x.
func isLoopback(a netip.Addr) bool { return a.Unmap().IsLoopback() }

// procStat is what the package reads from /proc/PID/stat: the command name and the start time,
// which together with the pid name one process for good (a pid is reused, a pid and a start
// time are not).
type procStat struct {
	Comm  string
	Start uint64 // field 22, in clock ticks after boot
}

// parseProcStat parses /proc/PID/stat: "PID (COMM) STATE PPID …". COMM may hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseProcStat(data []byte) (procStat, error) {
	s := strings.TrimSpace(string(data))
	open := strings.IndexByte(s, '(')
	end := strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, errors.New("malformed /proc/PID/stat")
	}
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state); the start time is field 22.
	if len(f) < 20 {
		return procStat{}, errors.New("malformed /proc/PID/stat")
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, errors.New("malformed /proc/PID/stat")
	}
	return procStat{Comm: s[open+1 : end], Start: start}, nil
}
