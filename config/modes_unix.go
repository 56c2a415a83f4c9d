//go:build unix

package config

import (
	"io/fs"
	"os"
	"syscall"
)

// strictModes says whether owners and permission bits mean something here.
const strictModes = true

// owner is the uid that owns a file.
func owner(fi fs.FileInfo) int {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1
	}
	return int(st.Uid)
}

// open opens path for reading without blocking, should it be a FIFO: checkFile refuses anything
// but a regular file once it is open.
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
