package listenowner

import "net"

// Accepted reports whether a process holds the far end of conn in macOS's list, for the tests
// that need the accepted path of Check and not the listener's.
func Accepted(conn net.Conn) bool {
	held, err := FarEndHeld(conn)
	return err == nil && held
}

// ProcOwner is Owner: macOS has one table, where Linux has sock_diag and /proc, and the tests
// that hold Linux's two to the same answers ask it twice.
func ProcOwner(conn net.Conn) (int, error) { return Owner(conn) }

// ProcFarEndHeld is FarEndHeld, likewise.
func ProcFarEndHeld(conn net.Conn) (bool, error) { return FarEndHeld(conn) }
