//go:build linux || darwin

package filestate

import (
	"io/fs"
	"syscall"
	"time"
)

// Times returns a file's modification and change (inode) times, as stat gave them in fi; ok is
// false where fi holds no stat.
func Times(fi fs.FileInfo) (mtime, ctime time.Time, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, time.Time{}, false
	}
	m, c := statTimes(st)
	return time.Unix(m.Unix()), time.Unix(c.Unix()), true
}
