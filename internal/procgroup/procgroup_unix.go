//go:build linux || darwin

package procgroup

import (
	"runtime"
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

// Exited says at once, without waiting and without reaping, whether the child pid has exited:
// it is a zombie, or it was reaped already (waitid answers ECHILD; pid must be a child of this
// process, as its callers' are). Another error says no.
func Exited(pid int) bool {
	var info [32]int32 // siginfo_t, 128 bytes: si_pid stays 0 while the child runs (waitid(2), WNOHANG)
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info)),
			syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT, 0, 0)
		switch errno {
		case syscall.EINTR:
			continue
		case syscall.ECHILD:
			return true
		case 0:
			return info[siPIDOffset/4] != 0
		default:
			return false
		}
	}
}

// siPIDOffset is where siginfo_t holds si_pid, in bytes: after si_signo, si_errno and si_code,
// at 12 on macOS (XNU bsd/sys/signal.h, __siginfo) and on 32-bit Linux, and at 16 on 64-bit
// Linux, whose union of fields after them holds pointers and is aligned to 8
// (include/uapi/asm-generic/siginfo.h).
var siPIDOffset = func() int {
	if runtime.GOOS == "linux" && unsafe.Sizeof(uintptr(0)) == 8 {
		return 16
	}
	return 12
}()
