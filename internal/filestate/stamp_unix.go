//go:build linux || darwin

package filestate

import (
	"os"
	"syscall"
	"time"
)

// stamp is a file's metadata, as a look compares it. known is false when the file could not be
// looked at: such a stamp never matches.
type stamp struct {
	known        bool
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
	mode         uint32
}

func stampOf(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{}
	}
	mtime, ctime := statTimes(st)
	return stamp{known: true, dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: mtime, ctime: ctime, mode: uint32(st.Mode)}
}

// changedSince says whether the file's modification or change time is t or later.
func (s stamp) changedSince(t time.Time) bool {
	return !time.Unix(s.mtime.Unix()).Before(t) || !time.Unix(s.ctime.Unix()).Before(t)
}

// changedNear says whether the file's modification or change time lies within d of t, before it
// or after.
func (s stamp) changedNear(t time.Time, d time.Duration) bool {
	near := func(ts syscall.Timespec) bool {
		at := time.Unix(ts.Unix())
		return !at.Before(t.Add(-d)) && !at.After(t.Add(d))
	}
	return s.known && (near(s.mtime) || near(s.ctime))
}
