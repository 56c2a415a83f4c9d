package worktree

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
)

// anyAssumeUnchanged reads the bytes of a git index file (gitformat-index(5): versions 2, 3 and
// 4, SHA-1 or SHA-256 object names) and says whether any of its entries has the assume-unchanged
// bit (git update-index --assume-unchanged). ok is false when the bytes are not an index this
// reader can vouch for: another version, a trailer that is not the checksum of what comes before
// (index.skipHash writes zeros), entries that do not fit; the caller then asks git.
//
// It spares Changes a `git ls-files -v` of every entry, which costs tens of milliseconds in a
// large checkout, for a bit that is almost never set.
func anyAssumeUnchanged(b []byte) (found, ok bool) {
	const header = 12
	if len(b) < header || !bytes.Equal(b[:4], []byte("DIRC")) {
		return false, false
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return false, false
	}
	// The trailer is the checksum of everything before it, with the repository's hash: it says
	// which hash names the objects, and that the bytes are whole.
	var hashLen int
	switch {
	case len(b) >= header+sha1.Size && checksum(b, sha1.Size, func(p []byte) []byte { s := sha1.Sum(p); return s[:] }):
		hashLen = sha1.Size
	case len(b) >= header+sha256.Size && checksum(b, sha256.Size, func(p []byte) []byte { s := sha256.Sum256(p); return s[:] }):
		hashLen = sha256.Size
	default:
		return false, false
	}
	body := b[:len(b)-hashLen]
	count := binary.BigEndian.Uint32(b[8:12])
	const stat = 40 // ctime, mtime (seconds and nanoseconds), dev, ino, mode, uid, gid, size
	at := header
	for i := uint32(0); i < count; i++ {
		start := at
		at += stat + hashLen
		if at+2 > len(body) {
			return false, false
		}
		flags := binary.BigEndian.Uint16(body[at:])
		at += 2
		if flags&0x8000 != 0 {
			found = true
		}
		if flags&0x4000 != 0 { // extended flags follow (version 3 and later)
			if version < 3 {
				return false, false
			}
			at += 2
		}
		if version == 4 {
			// The path: a varint (how much of the previous path to drop), then the rest of it,
			// ended by NUL; no padding.
			for {
				if at >= len(body) {
					return false, false
				}
				c := body[at]
				at++
				if c&0x80 == 0 {
					break
				}
			}
		}
		nul := bytes.IndexByte(body[min(at, len(body)):], 0)
		if nul < 0 {
			return false, false
		}
		at += nul + 1
		if version < 4 {
			// NUL padding to a multiple of 8 bytes from the entry's start; the name's own NUL is
			// the first of 1 to 8.
			at = start + (at-1-start+8)&^7
			if at > len(body) {
				return false, false
			}
		}
	}
	// The extensions: a split index ("link") holds only part of the entries; the rest, in the
	// shared index, this reader does not see.
	for at+8 <= len(body) {
		sig, size := string(body[at:at+4]), binary.BigEndian.Uint32(body[at+4:])
		if sig == "link" || uint64(size) > uint64(len(body)-at-8) {
			return false, false
		}
		at += 8 + int(size)
	}
	if at != len(body) {
		return false, false
	}
	return found, true
}

// checksum says whether b ends with sum of the rest of b, n bytes long.
func checksum(b []byte, n int, sum func([]byte) []byte) bool {
	return bytes.Equal(sum(b[:len(b)-n]), b[len(b)-n:])
}
