package filestate

import "syscall"

// statTimes is a stat's modification and change times: Linux's Mtim and Ctim.
func statTimes(st *syscall.Stat_t) (mtime, ctime syscall.Timespec) { return st.Mtim, st.Ctim }
