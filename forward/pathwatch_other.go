//go:build !linux

package forward

// watchNetwork watches nothing where the system's network changes are not read (see
// pathwatch_linux.go): sleep is still seen, and keepalives notice a dead path.
func watchNetwork(stop <-chan struct{}, notify func(string)) {}
