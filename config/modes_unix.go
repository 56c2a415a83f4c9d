//go:build unix

package config

import (
	"os"
	"syscall"
)

// strictModes says whether owners and permission bits mean something here.
const strictModes = true

// open opens path for reading without blocking, should it be a FIFO: checkFile refuses anything
// but a regular file once it is open.
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
