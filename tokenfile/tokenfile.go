// Package tokenfile reads the owner-only file that holds the bus token on an SSH host.
//
// On this computer krad-ade hands the bus token to its terminals as KRAD_ADE_TOKEN. On an SSH host
// it writes the token to a file instead and names it in KRAD_ADE_TOKEN_FILE: the token changes each
// time the app starts, and a file can be rewritten when the app reconnects, where a terminal's
// environment cannot. krad reads the file on every call, so long-lived terminals on the host keep
// working across restarts of the app. (The writing side, an atomic owner-only write over SSH, comes
// with the forwarding manager.)
//
// # Security model
//
// Whoever reads the file holds the token, and whoever holds the token can call the bus as any
// terminal of the app, a lead's included (the caller is declared, not proven). [Read] therefore
// refuses a file that anyone but its owner could have read or planted:
//
//   - a symbolic link: it could point anywhere, and be swapped between a check and the read. The
//     file is opened with O_NOFOLLOW and checked again once open, so a link swapped in after the
//     first look is refused too;
//   - anything but a regular file: a FIFO would block the reader, a device could be anything;
//   - a file another user owns: they could have written a token of their own choosing, and be
//     listening where it leads;
//   - a file with any group or other permission bit: a token others could read is a token others
//     hold.
//
// It also refuses content that is not exactly one token: 32 lowercase hex digits and at most one
// trailing newline. Errors name the file and say what to change; they never contain what the file
// holds.
//
// # What it does not protect
//
// Processes of the same user can read the file, as they can read the user's terminals' environments;
// the bus protects the app from other users and other machines, not from the user's own programs.
// Root can read anything. Read does not judge the folder the file is in: the writer makes it
// owner-only, and a folder others can write lets them remove the file, not plant one Read accepts.
//
// Reading token files needs the file's owner and mode bits, so it works on Unix only; elsewhere
// Read returns an error.
package tokenfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/krad-ade/krad/api"
)

// ErrMalformed says that a token file does not hold exactly one token.
var ErrMalformed = errors.New("it must hold a token, 32 lowercase hex digits, and at most a trailing newline")

// maxSize is the longest well-formed token file: a token and a newline.
const maxSize = api.TokenLen + 1

// Read reads the bus token from the file at path, after checking that only its owner, the current
// user, can read or write it. See the package documentation for what it refuses and why.
func Read(path string) (api.Token, error) {
	if errUnsupported != nil {
		return api.Token{}, fmt.Errorf("token file %q: %w", path, errUnsupported)
	}
	// Look before opening, so that a FIFO or a device is refused without being opened.
	fi, err := os.Lstat(path)
	if err != nil {
		return api.Token{}, fmt.Errorf("token file %q: %w", path, cause(err))
	}
	if err := check(path, fi); err != nil {
		return api.Token{}, err
	}
	f, err := open(path)
	if err != nil {
		return api.Token{}, err
	}
	defer f.Close()
	// What was opened is what counts: check it again, in case the path changed since the look.
	opened, err := f.Stat()
	if err != nil {
		return api.Token{}, fmt.Errorf("token file %q: %w", path, cause(err))
	}
	if !os.SameFile(fi, opened) {
		return api.Token{}, fmt.Errorf("token file %q was replaced while it was read", path)
	}
	if err := check(path, opened); err != nil {
		return api.Token{}, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return api.Token{}, fmt.Errorf("token file %q: %w", path, cause(err))
	}
	tok, err := parse(b)
	if err != nil {
		return api.Token{}, fmt.Errorf("token file %q does not hold a token: %w", path, err)
	}
	return tok, nil
}

// check refuses what is not an owner-only regular file of the current user.
func check(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("token file %q is a symbolic link: name the file itself", path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("token file %q is not a regular file", path)
	}
	if uid, me := owner(fi), os.Getuid(); uid != me {
		return fmt.Errorf("token file %q is owned by uid %d, not by you (uid %d)", path, uid, me)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("token file %q has mode %04o: it must be owner-only (chmod 600 %q)", path, perm, path)
	}
	return nil
}

// parse reads a token file's content. Its errors are ErrMalformed and never hold the content.
func parse(b []byte) (api.Token, error) {
	if len(b) > maxSize {
		return api.Token{}, ErrMalformed
	}
	tok, err := api.ParseToken(strings.TrimSuffix(string(b), "\n"))
	if err != nil {
		return api.Token{}, ErrMalformed
	}
	return tok, nil
}

// cause drops the path from an *fs.PathError, which the callers name themselves, quoted.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
