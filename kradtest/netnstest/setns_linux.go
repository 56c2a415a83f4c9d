package netnstest

import "golang.org/x/sys/unix"

// setns moves the calling thread into the network namespace open at fd.
func setns(fd int) error { return unix.Setns(fd, unix.CLONE_NEWNET) }
