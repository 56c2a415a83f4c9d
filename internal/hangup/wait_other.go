//go:build !linux && !darwin

package hangup

import (
	"context"
	"net"
)

// Wait returns ErrUnknown on this system: it cannot tell a close from a half-close.
func Wait(ctx context.Context, conn net.Conn) error { return ErrUnknown }
