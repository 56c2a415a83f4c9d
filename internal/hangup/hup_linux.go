package hangup

import "golang.org/x/sys/unix"

// peerClosed says whether the peer of the AF_UNIX stream socket fd has closed its end: Linux's
// poll reports POLLHUP once it has, and only POLLRDHUP after a half-close (shutdown of the
// peer's writing side).
func peerClosed(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
	n, err := unix.Poll(p, 0)
	return err == nil && n == 1 && p[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
}
