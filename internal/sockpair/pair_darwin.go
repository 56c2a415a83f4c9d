package sockpair

import "syscall"

// socketpair makes the pair, then marks both ends close-on-exec, holding syscall.ForkLock for
// reading in between, as the standard library does for its own sockets where the system has no
// SOCK_CLOEXEC (net/sys_cloexec.go): a fork, which takes the lock for writing, cannot happen
// between the two steps, so no child that another goroutine starts inherits the pair.
func socketpair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return fds, nil
}
