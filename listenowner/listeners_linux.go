//go:build linux

package listenowner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"syscall"
)

// WriteListeners writes the TCP sockets (IPv4 and IPv6) that listen on port, in the lines of
// /proc/net/tcp with its header (as the kernel prints them, addresses in the host's byte order),
// and returns how many it wrote. It asks sock_diag for the listening sockets only, where reading
// /proc/net/tcp walks the kernel's whole table of connections: on a host with much memory, a
// table of hundreds of thousands of slots, most of them empty, several milliseconds a read.
// Where netlink is refused (qemu-user translates no sock_diag), it reads /proc/net/tcp and tcp6.
//
// It is how the app's check of its forward on an SSH host learns who listens on the forward's
// port, through the static krad there (krad-ade-agents listeners).
func WriteListeners(w io.Writer, port uint16) (int, error) {
	socks, err := listeners(port)
	if err != nil {
		return 0, err
	}
	if err := writeTable(w, socks, binary.NativeEndian); err != nil {
		return 0, err
	}
	return len(socks), nil
}

// listeners is the listening TCP sockets on port, from sock_diag, else from /proc.
func listeners(port uint16) ([]socket, error) {
	socks, err := diagListeners(port)
	if err == nil {
		return socks, nil
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return nil, err
	}
	socks = nil
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		s, err := readTableFile(path, port)
		if err != nil {
			if path == "/proc/net/tcp6" && errors.Is(err, syscall.ENOENT) {
				continue // a host without IPv6
			}
			return nil, err
		}
		for _, l := range s {
			if l.state == stateListen {
				socks = append(socks, l)
			}
		}
	}
	return socks, nil
}

// diagListeners asks sock_diag for the listening TCP sockets of both families on port.
func diagListeners(port uint16) ([]socket, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkSockDiag)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	defer syscall.Close(fd)
	return diagListenersOn(fd, port, []uint8{syscall.AF_INET, syscall.AF_INET6})
}
