// Package fileacl reads macOS's access control lists, which grant rights that the permission
// bits do not show: a folder of mode 0700 may still let another user add or replace files in it
// (chmod +a "bob allow add_file"), and a file of mode 0600 let another read it. Linux's POSIX
// ACLs show in the group bits (they are the ACL's mask), which the mode checks already read; so
// the checks that refuse a file others may write or read (config.toml and its folders, the token
// file) ask [Read] on macOS too, where it asks getattrlist(2) for ATTR_CMN_EXTENDED_SECURITY, and
// [Read] finds nothing elsewhere. [Parse] reads the kernel's answer on every system, so that its
// tests run on Linux from bytes.
//
// The layout, from XNU: getattrlist's buffer starts with its length (u_int32_t), then one
// attrreference_t {int32_t attr_dataoffset; u_int32_t attr_length} (bsd/sys/attr.h), whose offset
// counts from the attrreference itself; a length of 0 means no ACL. The data is a struct
// kauth_filesec (bsd/sys/kauth.h): fsec_magic (KAUTH_FILESEC_MAGIC), fsec_owner and fsec_group
// (guid_t, 16 bytes each), then struct kauth_acl: acl_entrycount (KAUTH_FILESEC_NOACL for none),
// acl_flags, and acl_entrycount struct kauth_ace of 24 bytes: ace_applicable (guid_t), ace_flags,
// ace_rights. bsd/vfs/vfs_attrlist.c (attrlist_pack_variable2) packs it in the host's byte order;
// every Mac is little-endian.
//
// The entries name users and groups by GUID, which this package does not resolve (that takes
// macOS's directory services): an allow entry for the owner counts like any other, as the mode
// checks count group write for a group of one.
package fileacl

import (
	"encoding/binary"
	"errors"
	"fmt"
)

const (
	filesecMagic   = 0x012cc16d // KAUTH_FILESEC_MAGIC
	filesecNoACL   = 0xffffffff // KAUTH_FILESEC_NOACL
	maxEntries     = 128        // KAUTH_ACL_MAX_ENTRIES
	filesecEntries = 44         // offsetof(struct kauth_filesec, fsec_acl.acl_ace)
	entryLen       = 24         // sizeof(struct kauth_ace)

	kindMask = 0xf // KAUTH_ACE_KINDMASK, of ace_flags

	// The rights that let their holder change what a file or folder holds, or who may: add or
	// replace files and folders in it, delete it or what it holds, change its ACL and mode, take
	// it over (KAUTH_VNODE_WRITE_DATA, also ADD_FILE; APPEND_DATA, also ADD_SUBDIRECTORY; DELETE;
	// DELETE_CHILD; WRITE_SECURITY; TAKE_OWNERSHIP), and the generic ones that stand for them
	// (KAUTH_ACE_GENERIC_ALL, KAUTH_ACE_GENERIC_WRITE).
	writeRights = 1<<2 | 1<<5 | 1<<4 | 1<<6 | 1<<12 | 1<<13 | 1<<21 | 1<<23
)

// The flags of an entry (ace_flags, bsd/sys/kauth.h): its kind, and how it is inherited.
const (
	Permit      = 1      // KAUTH_ACE_PERMIT: the entry allows its rights
	Deny        = 2      // KAUTH_ACE_DENY: the entry takes its rights away
	FileInherit = 1 << 5 // KAUTH_ACE_FILE_INHERIT: files made in the folder get the entry
	OnlyInherit = 1 << 8 // KAUTH_ACE_ONLY_INHERIT: the entry is for what is made inside only
)

// Some rights of an entry (ace_rights: KAUTH_VNODE_* in bsd/sys/kauth.h), as chmod +a names them.
const (
	ReadData = 1 << 1 // read (list, for a folder)
	AddFile  = 1 << 2 // write (add_file, for a folder)
	Delete   = 1 << 4 // delete
)

// ErrFormat is wrapped by every error about an ACL that cannot be read as XNU lays it out.
var ErrFormat = errors.New("not a file's ACL as getattrlist returns it")

// Entry is one entry of an ACL: whom it applies to (a directory-services GUID, which this package
// does not resolve), its flags (permit or deny, inheritance) and its rights.
type Entry struct {
	Who    [16]byte
	Flags  uint32
	Rights uint32
}

// Parse reads getattrlist's answer for ATTR_CMN_EXTENDED_SECURITY: the entries of the file's
// ACL, none when it has none. It refuses an answer that does not hold together.
func Parse(b []byte) ([]Entry, error) {
	le := binary.LittleEndian
	if len(b) < 12 {
		return nil, fmt.Errorf("%d bytes: %w", len(b), ErrFormat)
	}
	total := uint64(le.Uint32(b))
	if total < 12 || total > uint64(len(b)) {
		return nil, fmt.Errorf("a length of %d in %d bytes: %w", total, len(b), ErrFormat)
	}
	b = b[:total]
	off, n := int64(int32(le.Uint32(b[4:]))), uint64(le.Uint32(b[8:]))
	if n == 0 {
		return nil, nil
	}
	start := 4 + off
	if start < 12 || uint64(start)+n > total {
		return nil, fmt.Errorf("the ACL's %d bytes at offset %d run out of the %d: %w", n, off, total, ErrFormat)
	}
	d := b[start : uint64(start)+n]
	if len(d) < filesecEntries {
		return nil, fmt.Errorf("an ACL of %d bytes: %w", len(d), ErrFormat)
	}
	if m := le.Uint32(d); m != filesecMagic {
		return nil, fmt.Errorf("magic %#x, want %#x: %w", m, filesecMagic, ErrFormat)
	}
	count := le.Uint32(d[36:])
	if count == filesecNoACL {
		return nil, nil
	}
	if count > maxEntries || filesecEntries+uint64(count)*entryLen > uint64(len(d)) {
		return nil, fmt.Errorf("%d entries in %d bytes: %w", count, len(d), ErrFormat)
	}
	aces := make([]Entry, count)
	for i := range aces {
		e := d[filesecEntries+i*entryLen:]
		aces[i] = Entry{Who: [16]byte(e[:16]), Flags: le.Uint32(e[16:]), Rights: le.Uint32(e[20:])}
	}
	return aces, nil
}

// Writes is the union of the write rights (writeRights) that an ACL's allow entries grant on
// the file or folder itself: 0 when it lets no one write there beyond what the mode says. Deny
// entries only take rights away, and an entry for what is made inside only (ONLY_INHERIT) grants
// nothing here.
func Writes(aces []Entry) uint32 {
	var r uint32
	for _, e := range aces {
		if e.Flags&kindMask == Permit && e.Flags&OnlyInherit == 0 {
			r |= e.Rights & writeRights
		}
	}
	return r
}

// Inherits reports whether files made in a folder with this ACL get an allow entry from it
// (FILE_INHERIT): a file made owner-only by its mode would be opened to whoever it names.
func Inherits(aces []Entry) bool {
	for _, e := range aces {
		if e.Flags&kindMask == Permit && e.Flags&FileInherit != 0 {
			return true
		}
	}
	return false
}

// Grants reports whether an ACL's allow entries grant anyone any right on the file itself: for a
// file that must be owner-only (a token file), where even a right to read is too much.
func Grants(entries []Entry) bool {
	for _, e := range entries {
		if e.Flags&kindMask == Permit && e.Flags&OnlyInherit == 0 && e.Rights != 0 {
			return true
		}
	}
	return false
}
