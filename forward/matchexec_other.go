//go:build !linux

package forward

import (
	"errors"
	"time"
)

// runMatchExec fails: the process group handling a Match exec needs is Linux's here.
func runMatchExec(command string, limit time.Duration) (int, error) {
	return 0, errors.New("Match exec is supported on Linux only")
}
