package filestate

import "syscall"

// statTimes is a stat's modification and change times: macOS's Mtimespec and Ctimespec (struct
// stat's st_mtimespec and st_ctimespec).
func statTimes(st *syscall.Stat_t) (mtime, ctime syscall.Timespec) { return st.Mtimespec, st.Ctimespec }
