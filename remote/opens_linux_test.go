package remote_test

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// opens counts how often the files of a folder are opened: a program that hashes one opens it,
// and so does the kernel when it runs one. It watches opens, reads and closes alike (inotify
// merges an event with the one before it only when they are the same), and counts the opens.
type opens struct {
	t  *testing.T
	fd int
	n  int
}

// watchOpens starts counting the opens of the files in dir.
func watchOpens(t *testing.T, dir string) *opens {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN|unix.IN_ACCESS|unix.IN_CLOSE_NOWRITE); err != nil {
		t.Fatal(err)
	}
	return &opens{t: t, fd: fd}
}

// count is how many opens there were since the watch began.
func (o *opens) count() int {
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(o.fd, buf)
		if err == unix.EAGAIN {
			return o.n
		}
		if err != nil {
			o.t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_OPEN != 0 {
				o.n++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}
