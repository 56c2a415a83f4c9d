package local

import "golang.org/x/sys/unix"

// unreadBytes is how many bytes wait in the socket fd that no read has taken yet (SIOCINQ: the
// bytes of the receive queue, for TCP and for AF_UNIX stream sockets alike), 0 when it cannot
// tell.
func unreadBytes(fd int) int {
	n, _ := unix.IoctlGetInt(fd, unix.SIOCINQ)
	return n
}
