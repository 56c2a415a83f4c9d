//go:build !linux && !darwin

package filestate

import (
	"io/fs"
	"time"
)

// Times returns ok false on this system: the package reads no stat here.
func Times(fs.FileInfo) (mtime, ctime time.Time, ok bool) { return time.Time{}, time.Time{}, false }
