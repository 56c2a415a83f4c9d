//go:build !linux && !darwin

package sshconfig

import (
	"errors"
	"time"
)

// runMatchExec fails: the process-group handling a Match exec needs is written for Linux and macOS.
func runMatchExec(command string, limit time.Duration) (int, error) {
	return 0, errors.New("Match exec is supported on Linux and macOS only")
}
