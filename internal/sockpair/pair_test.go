//go:build unix

package sockpair

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPairCloseOnExec: both descriptors the system hands back are close-on-exec already, before
// New dups them into net.Conns: a child that another goroutine starts in between inherits
// neither (Linux: SOCK_CLOEXEC; macOS: CloseOnExec under syscall.ForkLock).
func TestPairCloseOnExec(t *testing.T) {
	fds, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		defer syscall.Close(fd)
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			t.Fatal(err)
		}
		if flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("fd %d of the pair is not close-on-exec (flags %#x)", fd, flags)
		}
	}
}
