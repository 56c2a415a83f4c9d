package main

import "syscall"

// childAttr makes the kernel send SIGTERM to a child if krad-bench dies without stopping it, so
// that no app or baseline outlives a killed run. (Pdeathsig follows the thread that started the
// child; the Go runtime does not end threads of goroutines that are not locked to them.)
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
