//go:build !linux && !darwin

package listenowner

import (
	"errors"
	"fmt"
	"io"
	"net"
)

// Check returns nil on this system: only Linux and macOS show who owns a socket in a form this
// package reads. See the package documentation for what that leaves open.
func Check(conn net.Conn) error { return nil }

// Owner returns an error wrapping errors.ErrUnsupported on this system.
func Owner(conn net.Conn) (int, error) {
	return -1, fmt.Errorf("who owns a listener: %w", errors.ErrUnsupported)
}

// FarEndHeld returns an error wrapping errors.ErrUnsupported on this system.
func FarEndHeld(conn net.Conn) (bool, error) {
	return false, fmt.Errorf("whether the far end is held: %w", errors.ErrUnsupported)
}

// WriteListeners returns an error wrapping errors.ErrUnsupported on this system.
func WriteListeners(w io.Writer, port uint16) (int, error) {
	return 0, fmt.Errorf("list the listening sockets: %w", errors.ErrUnsupported)
}

// WriteSocketsOf returns an error wrapping errors.ErrUnsupported on this system.
func WriteSocketsOf(w io.Writer, pid int) (int, error) {
	return 0, fmt.Errorf("list a process's sockets: %w", errors.ErrUnsupported)
}
