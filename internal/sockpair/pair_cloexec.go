//go:build !darwin

package sockpair

import "syscall"

// socketpair makes the pair close-on-exec as it is made (SOCK_CLOEXEC): no child that another
// goroutine starts meanwhile inherits it.
func socketpair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
}
