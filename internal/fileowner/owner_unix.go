//go:build unix

package fileowner

import (
	"io/fs"
	"syscall"
)

// Of is the uid that owns the file fi describes, or -1 when fi does not say (a FileInfo that did
// not come from the system).
func Of(fi fs.FileInfo) int {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1
	}
	return int(st.Uid)
}
