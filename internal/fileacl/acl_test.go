package fileacl

import (
	"encoding/binary"
	"errors"
	"testing"
)

// The fixtures are getattrlist(2)'s answers for ATTR_CMN_EXTENDED_SECURITY, laid out as acl.go
// cites XNU: the length, an attrreference_t, then a struct kauth_filesec with its kauth_ace
// entries.

// macOS's rights and flags as chmod +a names them (bsd/sys/kauth.h).
const (
	rightAddSubdir  = 1 << 5  // append / add_subdirectory
	rightWriteAttrs = 1 << 8  // writeattr
	rightChown      = 1 << 13 // chown
	aceDirInherit   = 1 << 6  // KAUTH_ACE_DIRECTORY_INHERIT
)

// attrACL is getattrlist's answer for an ACL with entries aces.
func attrACL(aces ...Entry) []byte {
	le := binary.LittleEndian
	d := make([]byte, filesecEntries+len(aces)*entryLen)
	le.PutUint32(d[0:], filesecMagic)
	le.PutUint32(d[36:], uint32(len(aces)))
	for i, e := range aces {
		x := d[filesecEntries+i*entryLen:]
		copy(x, e.Who[:])
		le.PutUint32(x[16:], e.Flags)
		le.PutUint32(x[20:], e.Rights)
	}
	return attrWith(d)
}

// attrWith is getattrlist's answer holding data as its variable part, right after the
// attrreference (attr_dataoffset 8, counted from the attrreference at byte 4).
func attrWith(d []byte) []byte {
	le := binary.LittleEndian
	b := make([]byte, 12, 12+len(d))
	b = append(b, d...)
	le.PutUint32(b[0:], uint32(len(b)))
	le.PutUint32(b[4:], 8)
	le.PutUint32(b[8:], uint32(len(d)))
	return b
}

func noACLAnswer() []byte {
	b := make([]byte, 12)
	binary.LittleEndian.PutUint32(b, 12)
	return b
}

var bob = [16]byte{0xab, 0xcd, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}

func TestParseACL(t *testing.T) {
	everyoneDenyDelete := Entry{Who: [16]byte{0xab, 0xcd}, Flags: Deny, Rights: Delete} // a home folder's
	bobAddFile := Entry{Who: bob, Flags: Permit, Rights: AddFile | rightAddSubdir}
	noacl := attrACL()
	binary.LittleEndian.PutUint32(noacl[12+36:], filesecNoACL)
	for _, tt := range []struct {
		name string
		b    []byte
		want []Entry
	}{
		{"no ACL", noACLAnswer(), nil},
		{"KAUTH_FILESEC_NOACL", noacl, nil},
		{"an empty ACL", attrACL(), []Entry{}},
		{"a home folder's", attrACL(everyoneDenyDelete), []Entry{everyoneDenyDelete}},
		{"two entries", attrACL(everyoneDenyDelete, bobAddFile), []Entry{everyoneDenyDelete, bobAddFile}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) || (tt.want == nil) != (got == nil) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("entry %d: got %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestParseACLRefuses: an answer that does not hold together is an error that wraps
// ErrFormat, never a read past the buffer.
func TestParseACLRefuses(t *testing.T) {
	le := binary.LittleEndian
	good := attrACL(Entry{Who: bob, Flags: Permit, Rights: AddFile})
	set := func(off int, v uint32) []byte {
		b := append([]byte(nil), good...)
		le.PutUint32(b[off:], v)
		return b
	}
	for _, tt := range []struct {
		name string
		b    []byte
	}{
		{"nothing", nil},
		{"shorter than an attrreference", good[:11]},
		{"a length past the buffer", set(0, uint32(len(good)+1))},
		{"a length under 12", set(0, 8)},
		{"an offset back into the header", set(4, 0)},
		{"a negative offset", set(4, 0xfffffff0)},
		{"data past the length", set(8, uint32(len(good)))},
		{"too short for a kauth_filesec", attrWith(make([]byte, 40))},
		{"not KAUTH_FILESEC_MAGIC", set(12, 0x12345678)},
		{"more entries than the data holds", set(12+36, 2)},
		{"more than KAUTH_ACL_MAX_ENTRIES", set(12+36, 129)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := Parse(tt.b); !errors.Is(err, ErrFormat) {
				t.Errorf("got %+v, %v; want an error that wraps ErrFormat", got, err)
			}
		})
	}
	for n := range len(good) {
		if _, err := Parse(good[:n]); !errors.Is(err, ErrFormat) {
			t.Fatalf("the answer cut to %d of %d bytes: %v, want an error that wraps ErrFormat", n, len(good), err)
		}
	}
}

func TestACLRules(t *testing.T) {
	for _, tt := range []struct {
		name     string
		aces     []Entry
		writes   bool
		inherits bool
		grants   bool
	}{
		{"none", nil, false, false, false},
		{"deny entries take rights away only", []Entry{{Flags: Deny, Rights: AddFile | Delete}}, false, false, false},
		{"allow read", []Entry{{Who: bob, Flags: Permit, Rights: ReadData}}, false, false, true},
		{"allow writeattr only", []Entry{{Who: bob, Flags: Permit, Rights: rightWriteAttrs}}, false, false, true},
		{"allow add_file", []Entry{{Who: bob, Flags: Permit, Rights: AddFile}}, true, false, true},
		{"allow add_subdirectory", []Entry{{Who: bob, Flags: Permit, Rights: rightAddSubdir}}, true, false, true},
		{"allow delete", []Entry{{Who: bob, Flags: Permit, Rights: Delete}}, true, false, true},
		{"allow chown", []Entry{{Who: bob, Flags: Permit, Rights: rightChown}}, true, false, true},
		{"allow generic write", []Entry{{Who: bob, Flags: Permit, Rights: 1 << 23}}, true, false, true},
		{"for what is made inside only", []Entry{{Who: bob, Flags: Permit | OnlyInherit | aceDirInherit, Rights: AddFile}}, false, false, false},
		{"files made inside inherit read", []Entry{{Who: bob, Flags: Permit | FileInherit, Rights: ReadData}}, false, true, true},
		{"a deny that files inherit", []Entry{{Who: bob, Flags: Deny | FileInherit, Rights: ReadData}}, false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Writes(tt.aces) != 0; got != tt.writes {
				t.Errorf("Writes: got %v, want %v", got, tt.writes)
			}
			if got := Inherits(tt.aces); got != tt.inherits {
				t.Errorf("Inherits: got %v, want %v", got, tt.inherits)
			}
			if got := Grants(tt.aces); got != tt.grants {
				t.Errorf("Grants: got %v, want %v", got, tt.grants)
			}
		})
	}
}

func FuzzParseACL(f *testing.F) {
	f.Add(noACLAnswer())
	f.Add(attrACL())
	f.Add(attrACL(Entry{Who: bob, Flags: Permit | FileInherit, Rights: AddFile}, Entry{Flags: Deny, Rights: Delete}))
	f.Fuzz(func(t *testing.T, b []byte) {
		aces, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("got error %v, want one that wraps ErrFormat", err)
			}
			return
		}
		if len(aces) > maxEntries {
			t.Fatalf("got %d entries, more than an ACL holds", len(aces))
		}
		_, _ = Writes(aces), Inherits(aces)
	})
}
