package hangup

import "golang.org/x/sys/unix"

// peerClosed says whether the peer of the AF_UNIX stream socket fd has closed its end.
//
// macOS's poll is kqueue underneath, and reports POLLHUP for a filter at its end of file (XNU
// bsd/kern/sys_generic.c, poll_callback: EV_EOF becomes POLLHUP). The read filter reaches it at
// a half-close already (bsd/kern/uipc_socket.c, filt_soread_common: SS_CANTRCVMORE), so asking
// for POLLIN would not tell the two apart. The write filter reaches it only when this socket can
// send no more (filt_sowrite_common: SS_CANTSENDMORE), which for a connected pair happens when
// the peer closes (bsd/kern/uipc_usrreq.c, unp_disconnect, then soisdisconnected in
// bsd/kern/uipc_socket2.c sets both flags), never when it only shuts down its writing side
// (that sets SS_CANTRCVMORE here alone). Hence POLLOUT alone: POLLHUP with it is the close.
// The bus never shuts down its own writing side before its answer, which would also set it.
func peerClosed(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	n, err := unix.Poll(p, 0)
	return err == nil && n == 1 && p[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
}
