//go:build e2e

package main

import (
	"fmt"
	"syscall"
)

// sockdiag opens a NETLINK_SOCK_DIAG socket, as package listenowner does first, and says whether
// that worked. qemu-user translates only a few netlink families (route, uevent, audit) and refuses
// the others with EPROTONOSUPPORT: under it, listenowner reads /proc/net/tcp instead.
func sockdiag() error {
	const netlinkSockDiag = 4
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkSockDiag)
	if err != nil {
		fmt.Printf("refused: %v\n", err)
		return nil
	}
	syscall.Close(fd)
	fmt.Println("open")
	return nil
}
