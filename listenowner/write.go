package listenowner

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
)

// tableHeader is the first line of /proc/net/tcp, as Linux prints it.
const tableHeader = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"

// writeTable writes socks as /proc/net/tcp does: the header, then a line each, with the fields
// readTable and parseLine read (slot, local and remote address, state, queues, timer,
// retransmits, uid, timeout, inode), addresses as 32-bit words printed in order's byte order.
func writeTable(w io.Writer, socks []socket, order binary.ByteOrder) error {
	b := bufio.NewWriter(w)
	fmt.Fprintln(b, tableHeader)
	for i, s := range socks {
		fmt.Fprintf(b, "%4d: %s %s %02X 00000000:00000000 00:00000000 00000000 %5d        0 %d\n",
			i, hexAddrPort(s.local, order), hexAddrPort(s.remote, order), s.state, s.uid, s.inode)
	}
	return b.Flush()
}

// hexAddrPort is the inverse of parseAddrPort.
func hexAddrPort(ap netip.AddrPort, order binary.ByteOrder) string {
	a := ap.Addr()
	var raw []byte
	if a.Is4() {
		v := a.As4()
		raw = v[:]
	} else {
		v := a.As16()
		raw = v[:]
	}
	s := ""
	for i := 0; i < len(raw); i += 4 {
		s += fmt.Sprintf("%08X", order.Uint32(raw[i:]))
	}
	return fmt.Sprintf("%s:%04X", s, ap.Port())
}
