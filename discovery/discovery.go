// Package discovery reads and writes api.json, the file through which programs outside krad-ade's
// terminals find the agents bus.
//
// While it runs, the app (krad-ade) leaves api.json in its config folder, [Dir]:
//
//	{
//	  "api_version": 1,
//	  "endpoint": "127.0.0.1:52144",
//	  "token": "6f1c0d9e2b7a4c58e3f09a1d7b6c2e40",
//	  "pid": 48211,
//	  "started_at": "2026-11-10T09:12:00.000Z"
//	}
//
// The app calls [Write] when it starts (replacing the file of an earlier run) and [RemoveIfOurs]
// when it exits cleanly or the user turns discovery off. The krad CLI calls [Read] when the
// KRAD_ADE_* variables are not set. A file left by a crash can name a dead endpoint or a port that
// another program now holds, so a reader must dial and check that Hello answers with the file's
// pid before it trusts the file; this package only reads it.
//
// # Security model
//
// The token lets its holder list and watch the user's agents, so the file is for the user alone:
//
//   - Write creates the file with mode 0600 before it writes a byte, in a temporary file in the
//     same folder that it syncs and renames into place, so a reader sees the old file or the new
//     one and never half of one. It creates the folder with mode 0700, and refuses a folder that
//     other users can write to, and a symlink or anything but a regular file at api.json.
//   - Read refuses a symlink, anything but a regular file, a file another user owns (on Unix), and a
//     file that other users may read or write (any group or other permission bit), because the
//     token in it may have leaked or been planted.
//   - The token stays in an [api.Token], which prints "[REDACTED]". Write reveals it in one place,
//     to put it in the file. No error of this package contains the token or the file's contents.
//
// # What it does not protect
//
// Anything that runs as the user can read the file; the API does not try to protect the app from
// the user's own processes (see the spec's security model). On Windows the permission bits mean
// nothing and are not checked; the file is only as private as the user's profile folder. The
// package checks the owner of api.json but not of its folder, and a symlinked config folder is
// followed (it is how many people keep their dotfiles), so a folder that another user controls is
// outside its reach: krad-ade checks the folder itself before it starts (config.CheckFolder).
//
// The package imports nothing of the project except package api and two small internal ones
// (atomicfile, fileowner), so that the static CLI, which must not find the bus through this
// file, can be checked not to link it.
package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/atomicfile"
	"github.com/krad-ade/krad/internal/fileowner"
)

// FileName is the name of the discovery file in the folder [Dir] returns.
const FileName = "api.json"

// maxSize bounds what Read reads: a real file is under 200 bytes.
const maxSize = 64 << 10

// timeFormat is how started_at is written: RFC 3339 in UTC, with milliseconds.
const timeFormat = "2006-01-02T15:04:05.000Z"

// File is the contents of api.json.
type File struct {
	// APIVersion is the version of the Agents API the app serves; at least 1.
	APIVersion int
	// Endpoint is where the bus listens: a loopback host:port such as "127.0.0.1:52144".
	Endpoint string
	// Token is the bus token. It is on disk as 32 hex digits and prints as "[REDACTED]".
	Token api.Token
	// PID is the process id of the app that wrote the file.
	PID int
	// StartedAt is when that app started. The file holds it in UTC to the millisecond, and
	// [Read] returns it that way.
	StartedAt time.Time
}

// ErrNotOurs is returned by [RemoveIfOurs] when api.json belongs to another process and was left
// in place. It is a fact to log, not a failure.
var ErrNotOurs = errors.New("api.json belongs to another process")

// Dir returns the app's config folder, which holds api.json and config.toml:
// $XDG_CONFIG_HOME/krad-ade, else $HOME/.config/krad-ade, else %APPDATA%\krad-ade. A variable
// that is unset or not an absolute path is skipped, as the XDG spec asks. getenv is usually
// os.Getenv.
func Dir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "krad-ade"), nil
	}
	if d := getenv("HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, ".config", "krad-ade"), nil
	}
	if d := getenv("APPDATA"); filepath.IsAbs(d) {
		return filepath.Join(d, "krad-ade"), nil
	}
	return "", errors.New("no config folder: neither XDG_CONFIG_HOME nor HOME is an absolute path")
}

// Write puts f into dir/api.json atomically, replacing an earlier file, and creates dir (mode
// 0700) if it is missing. It refuses an f that [Read] would refuse, a dir that other users can
// write to, and a symlink or anything but a regular file at dir/api.json. On failure it leaves
// the earlier file, if any, and no temporary file behind.
//
// Its errors about the file are *fs.PathError naming dir/api.json once, as Read's are.
func Write(dir string, f File) error {
	target := filepath.Join(dir, FileName)
	data, err := encode(f)
	if err != nil {
		return &fs.PathError{Op: "write", Path: target, Err: err}
	}
	if err := makeDir(dir); err != nil {
		return err
	}
	return atomicfile.WriteFile(target, data, 0o600)
}

// Read reads and checks the api.json at path. A missing file gives an error that matches
// fs.ErrNotExist: the app is not running, or discovery is off. Errors say what is wrong with the
// file without quoting it: an *fs.PathError that names path once, with Op "read", and whose Err
// is the reason alone, for a caller that shows the path its own way.
func Read(path string) (File, error) {
	f, err := read(path)
	if err != nil {
		return File{}, pathError("read", path, err)
	}
	return f, nil
}

func read(path string) (File, error) {
	data, fi, err := readRegular(path)
	if err != nil {
		return File{}, err
	}
	if uid, me := fileowner.Of(fi), os.Getuid(); uid != -1 && uid != me {
		return File{}, fmt.Errorf("owned by uid %d, not by you (uid %d)", uid, me)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return File{}, fmt.Errorf("other users may read or change it (mode %04o, want 0600)", perm)
	}
	return decode(data)
}

// pathError is err as an *fs.PathError for op on path. A system call's own *fs.PathError about
// path gives its Err, so that the path is named once.
func pathError(op, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// RemoveIfOurs removes the api.json at path if it names pid. A missing file is not an error. A
// file that names another pid, or no pid, is left in place and ErrNotOurs is returned. A symlink
// or anything but a regular file is left in place with an error.
//
// Between reading the file and removing it, another app starting at that moment could replace
// it; the window is a few system calls wide.
func RemoveIfOurs(path string, pid int) error {
	data, _, err := readRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return pathError("remove", path, err)
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return fmt.Errorf("%w (it names no pid)", ErrNotOurs)
	}
	other, err := strconv.Atoi(string(fields["pid"]))
	if err != nil {
		return fmt.Errorf("%w (it names no pid)", ErrNotOurs)
	}
	if other != pid {
		return fmt.Errorf("%w (pid %d)", ErrNotOurs, other)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// check checks the fields of a File other than the token, for both Read and Write, so that every
// File that Read accepts can be written and every File that Write writes can be read.
func check(version int, endpoint string, pid int, startedAt time.Time) error {
	if version < 1 {
		return errors.New("api_version must be a whole number of at least 1")
	}
	if err := api.CheckEndpoint(endpoint); err != nil {
		return fmt.Errorf("endpoint: %w", err)
	}
	if pid < 1 {
		return errors.New("pid must be a whole number of at least 1")
	}
	if y := startedAt.UTC().Year(); startedAt.IsZero() || y < 0 || y > 9999 {
		return errors.New("started_at is not set or out of range")
	}
	return nil
}

var errBadToken = errors.New("token is not 32 hex digits")

// encode makes the file's bytes: the five keys in the spec's order, indented, ending in a newline.
func encode(f File) ([]byte, error) {
	if err := check(f.APIVersion, f.Endpoint, f.PID, f.StartedAt); err != nil {
		return nil, err
	}
	// The one place the token leaves its type: it goes into an owner-only file.
	token := f.Token.Reveal()
	if _, err := api.ParseToken(token); err != nil {
		return nil, errBadToken
	}
	data, err := json.MarshalIndent(struct {
		APIVersion int    `json:"api_version"`
		Endpoint   string `json:"endpoint"`
		Token      string `json:"token"`
		PID        int    `json:"pid"`
		StartedAt  string `json:"started_at"`
	}{f.APIVersion, f.Endpoint, token, f.PID, f.StartedAt.UTC().Format(timeFormat)}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return append(data, '\n'), nil
}

// decode parses and checks the file's bytes. Unknown keys are ignored, so that a newer app can add
// some; the five known ones are required. It never passes on an error of encoding/json or time,
// whose messages can quote the input.
func decode(data []byte) (File, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return File{}, errors.New("not a JSON object")
	}
	var (
		f                  File
		endpoint, token, t string
		err                error
	)
	for _, field := range []struct {
		name string
		into any
	}{
		{"api_version", &f.APIVersion},
		{"endpoint", &endpoint},
		{"token", &token},
		{"pid", &f.PID},
		{"started_at", &t},
	} {
		raw, ok := fields[field.name]
		if !ok {
			return File{}, fmt.Errorf("no %s", field.name)
		}
		switch into := field.into.(type) {
		case *int:
			// A whole number as JSON writes it: no fraction, no exponent.
			if *into, err = strconv.Atoi(string(raw)); err != nil {
				return File{}, fmt.Errorf("%s must be a whole number", field.name)
			}
		case *string:
			if !bytes.HasPrefix(raw, []byte(`"`)) || json.Unmarshal(raw, into) != nil {
				return File{}, fmt.Errorf("%s must be a string", field.name)
			}
		}
	}
	f.Endpoint = endpoint
	if f.Token, err = api.ParseToken(token); err != nil {
		return File{}, errBadToken
	}
	started, err := time.Parse(time.RFC3339, t)
	if err != nil {
		return File{}, errors.New("started_at is not an RFC 3339 time")
	}
	started = started.UTC()
	f.StartedAt = started.Add(-time.Duration(started.Nanosecond() % int(time.Millisecond)))
	if err := check(f.APIVersion, f.Endpoint, f.PID, f.StartedAt); err != nil {
		return File{}, err
	}
	return f, nil
}

// readRegular reads the regular file at path without following a symlink there. It checks that
// the file it opened is the one it looked at, so a symlink swapped in between is not followed.
func readRegular(path string) ([]byte, fs.FileInfo, error) {
	before, err := os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	if err := checkRegular(before); err != nil {
		return nil, nil, err
	}
	fh, err := open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !os.SameFile(before, fi) {
		return nil, nil, errors.New("changed while it was opened")
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxSize+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > maxSize {
		return nil, nil, fmt.Errorf("larger than %d KiB", maxSize>>10)
	}
	return data, fi, nil
}

// checkRegular refuses what Write would refuse to replace.
func checkRegular(fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return atomicfile.ErrSymlink
	case !fi.Mode().IsRegular():
		return atomicfile.ErrNotRegular
	}
	return nil
}

// makeDir creates dir with mode 0700 if it is missing, and checks that it is a folder other users
// cannot write to.
func makeDir(dir string) error {
	_, err := os.Lstat(dir)
	created := errors.Is(err, fs.ErrNotExist)
	if created {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create config folder: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("config folder: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("config folder: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("config folder %s is not a folder", dir)
	}
	if runtime.GOOS == "windows" {
		return nil
	}
	if created {
		// MkdirAll's mode went through the umask, which may have been odd.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("create config folder: %w", err)
		}
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("config folder %s is writable by other users (mode %04o); run chmod 700 on it", dir, perm)
	}
	return nil
}
