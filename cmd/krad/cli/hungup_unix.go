//go:build linux || darwin

package cli

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// terminalHungUp says whether f is a terminal that has hung up: a character device whose
// attributes the kernel refuses to read with EIO. On Linux every operation but close on a
// terminal that hung up fails so (drivers/tty/tty_io.c: the file's operations become
// hung_up_tty_fops, whose ioctl answers EIO); a terminal that never was one (a pipe, /dev/null)
// answers ENOTTY or is no character device. On macOS the check is built and vetted, not run: this
// project has no Mac (README, "On a Mac").
func terminalHungUp(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	hungUp := false
	_ = rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			return
		}
		_, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
		hungUp = errors.Is(err, unix.EIO)
	})
	return hungUp
}
