package fileacl

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Read reads the ACL of path (its target, should it be a symlink, as os.Stat does):
// getattrlist(2) with ATTR_CMN_EXTENDED_SECURITY, which golang.org/x/sys/unix does not wrap, so
// it is called by its number (syscall.SYS_GETATTRLIST, 220, as bsd/kern/syscalls.master has it).
func Read(path string) ([]Entry, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return nil, err
	}
	al := unix.Attrlist{Bitmapcount: unix.ATTR_BIT_MAP_COUNT, Commonattr: unix.ATTR_CMN_EXTENDED_SECURITY}
	// The length, one attrreference, and the largest ACL: KAUTH_ACL_MAX_ENTRIES entries.
	buf := make([]byte, 12+filesecEntries+maxEntries*entryLen)
	_, _, errno := syscall.Syscall6(syscall.SYS_GETATTRLIST, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&al)),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
	if errno != 0 {
		return nil, fmt.Errorf("read the ACL of %s: %w", path, errno)
	}
	aces, err := Parse(buf)
	if err != nil {
		return nil, fmt.Errorf("read the ACL of %s: %w", path, err)
	}
	return aces, nil
}
