//go:build linux || darwin

package procgroup

import (
	"syscall"
	"unsafe"
)

// pPID is waitid(2)'s P_PID: 1 on Linux, and on macOS (the second of idtype_t's P_ALL, P_PID,
// P_PGID in XNU's bsd/sys/wait.h).
const pPID = 1

// WaitExited waits until the child pid has exited, without reaping it (WNOWAIT): it stays a
// zombie, which keeps its pid, and so its process group's id, from being given to another.
//
// On macOS too the waitid system call (number 173, syscall.SYS_WAITID) leaves the child waitable
// under WNOWAIT (XNU bsd/kern/kern_exit.c, waitid_nocancel), which wait4 has no flag for; the
// standard library's os.Process does not use it there, so this calls it itself.
func WaitExited(pid int) error {
	var info [128]byte // siginfo_t, not read
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info)),
			syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}
