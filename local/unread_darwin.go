package local

import "golang.org/x/sys/unix"

// unreadBytes is how many bytes wait in the socket fd that no read has taken yet, 0 when it
// cannot tell. It asks SO_NREAD, which for a stream socket (TCP, and the AF_UNIX pairs of Pipe)
// is the receive buffer's count less its control bytes (XNU bsd/kern/uipc_socket.c, sogetopt:
// so_rcv.sb_cc - so_rcv.sb_ctl); FIONREAD would give sb_cc, control bytes included, and
// golang.org/x/sys/unix does not name it for darwin.
func unreadBytes(fd int) int {
	n, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_NREAD)
	return n
}
