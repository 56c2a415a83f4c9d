// Package tokenfile keeps the bus token in an owner-only file on an SSH host: [Write] puts it
// there over SSH, [Remove] takes it away, and [Read] is how krad on the host reads it.
//
// On an SSH host krad-ade writes the bus token to a file and names it in KRAD_ADE_TOKEN_FILE: the
// token changes each time the app starts, and a file can be rewritten when the app reconnects,
// where a terminal's environment cannot. The file is ~/.krad-ade/run/<instance>/token, the same
// path for each start of the same app instance, and krad reads it on every call, before
// KRAD_ADE_TOKEN, so long-lived terminals keep working across restarts of the app. The app
// removes the file when it exits cleanly. On this computer the app does the same, with the same
// script run by a local sh (any [Host] will do), and gives its terminals KRAD_ADE_TOKEN beside the
// file, as the spec asks.
//
// # Security model
//
// Whoever reads the file holds the token, and whoever holds the token can call the bus as any
// terminal of the app, a lead's included (the caller is declared, not proven).
//
// [Write] therefore keeps the token out of everyone else's reach on the way and at rest:
//
//   - the token travels on the SSH session's stdin, never in a command line or an environment,
//     where other users of the host could read it in /proc;
//   - the folders ~/.krad-ade, run and <instance> must be real folders the user owns: a symbolic
//     link, anything but a folder, or another user's folder is refused, since whoever controls
//     the folder chooses where the token goes; the user's own folders are made 0700;
//   - the token is written with umask 077 to a new temporary file in the instance's folder, checked
//     to be a regular file of the user's holding all of the token, made 0600, and renamed over the
//     old file, so a reader sees the old token or the new one, never a mix or nothing.
//
// [Read] refuses a file that anyone but its owner could have read or planted:
//
//   - a symbolic link: it could point anywhere, and be swapped between a check and the read. The
//     file is opened with O_NOFOLLOW and checked again once open, so a link swapped in after the
//     first look is refused too;
//   - anything but a regular file: a FIFO would block the reader, a device could be anything;
//   - a file another user owns: they could have written a token of their own choosing, and be
//     listening where it leads;
//   - a file with any group or other permission bit, or, on macOS, an ACL that allows anyone
//     anything (which the mode does not show): a token others could read is a token others hold.
//
// It also refuses content that is not exactly one token: 32 lowercase hex digits and at most one
// trailing newline. Errors name the file and say what to change; they never contain what the file
// holds.
//
// # What it does not protect
//
// Processes of the same user can read the file, as they can read the user's terminals' environments;
// the bus protects the app from other users and other machines, not from the user's own programs.
// Root can read anything. A home folder that other users can write is not defended: they could
// swap ~/.krad-ade between Write's checks and its use (and replace the user's ~/.bashrc anyway).
// Read does not judge the folder the file is in: Write makes it owner-only, and a folder others
// can write lets them remove the file, not plant one Read accepts.
//
// Reading token files needs the file's owner and mode bits, so it works on Unix only; elsewhere
// Read returns an error. Write and Remove run POSIX sh on the host (see package remote/shell) and
// work from any system.
package tokenfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/fileacl"
	"github.com/krad-ade/krad/internal/fileowner"
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
	if uid, me := fileowner.Of(fi), os.Getuid(); uid != me {
		return fmt.Errorf("token file %q is owned by uid %d, not by you (uid %d)", path, uid, me)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("token file %q has mode %04o: it must be owner-only (chmod 600 %q)", path, perm, path)
	}
	aces, err := readACL(path)
	if err != nil {
		return fmt.Errorf("token file %q: %w", path, err)
	}
	if fileacl.Grants(aces) {
		return fmt.Errorf("token file %q has an ACL that grants others access (ls -le shows it): it must be owner-only (chmod -N %q)", path, path)
	}
	return nil
}

// readACL reads a file's ACL: on macOS only, where the mode does not show what an ACL grants
// (package fileacl). Tests swap it.
var readACL = fileacl.Read

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
