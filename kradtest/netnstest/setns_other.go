//go:build !linux

package netnstest

import (
	"errors"
	"fmt"
)

// setns fails: network namespaces are Linux's (New skips the test before it is reached).
func setns(int) error { return fmt.Errorf("network namespaces: %w", errors.ErrUnsupported) }
