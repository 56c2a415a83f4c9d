//go:build !unix

package tokenfile

import (
	"errors"
	"os"
	"runtime"
)

// errUnsupported: without Unix owners and modes, Read cannot tell an owner-only file.
var errUnsupported = errors.New("token files are read on Unix only, not on " + runtime.GOOS)

func open(string) (*os.File, error) { return nil, errUnsupported }
