//go:build unix

package discovery

import (
	"errors"
	"os"
	"syscall"

	"github.com/krad-ade/krad/internal/atomicfile"
)

// open opens path for reading without following a symlink there, and without blocking should it
// have become a FIFO since it was looked at.
func open(path string) (*os.File, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, atomicfile.ErrSymlink
	}
	if err != nil {
		return nil, err
	}
	return fh, nil
}
