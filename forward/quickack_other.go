//go:build !linux

package forward

import "net"

// quickAcks returns conn as it is: TCP_QUICKACK is Linux's (see quickack_linux.go). macOS
// acknowledges a lone segment after its own delayed-ACK timer.
func quickAcks(conn, sock net.Conn) net.Conn { return conn }
