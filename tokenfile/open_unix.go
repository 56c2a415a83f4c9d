//go:build unix

package tokenfile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

var errUnsupported error

// open opens path for reading without following a symbolic link, and without blocking should it
// have become a FIFO since it was looked at.
func open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("token file %q is a symbolic link: name the file itself", path)
	}
	if err != nil {
		return nil, fmt.Errorf("token file %q: %w", path, cause(err))
	}
	return f, nil
}
