//go:build !linux && !darwin

package forward

import "errors"

// startProxyCommand fails: the process-group handling ProxyCommand needs is written for Linux and macOS.
func startProxyCommand(command, addr string) (*commandConn, error) {
	return nil, errors.New("ProxyCommand is supported on Linux and macOS only")
}

// Close does nothing: no commandConn is made on this system.
func (c *commandConn) Close() error { return nil }
