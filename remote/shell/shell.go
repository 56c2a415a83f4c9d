// Package shell writes the scripts krad-ade runs on an SSH host and reads what they print.
//
// A command sent over SSH is run by the user's login shell (bash, zsh, fish, tcsh, …), which may
// read start-up files first, and some of those print things even when no one is looking (a motd,
// a "welcome", a conda banner): on Debian and others, bash reads ~/.bashrc for a command from ssh.
// So every script here:
//
//   - runs under sh, whatever the login shell: [Script.Command] is `sh -c '…' sh ARG…`, on one line,
//     quoted so that bash, zsh, dash, fish and tcsh all pass it through unchanged;
//   - is POSIX sh (dash, busybox ash, bash as sh), plus `test -O`, which all of those have;
//   - says how it ended in one frame of marker lines on stdout, __KRAD_<NAME>_BEGIN__ …
//     __KRAD_<NAME>_END__, so that output before or after it is ignored, and a frame that never
//     comes is an error that quotes, escaped and shortened, what came instead ([*NoiseError]).
//
// The frame's first line is a verdict: "ok" and what the script reports; "refused" when a folder
// under ~/.krad-ade is not safe to use ([*RefusedError]); "failed" and what failed, with the
// details on stderr. [Script.Result] reads it.
//
// # Security model
//
// Scripts take their variable parts as arguments, quoted by [Quote], never spliced into the script;
// secrets travel on stdin, never as arguments. The folders under ~/.krad-ade are entered with
// krad_enter (see [Prelude]): a symbolic link, something that is not a folder, or a folder another
// user owns is refused, so that no one else can choose where krad-ade writes or what it installs;
// a folder of ours with group or other bits is made owner-only. A home folder that others can
// write is not defended: they could replace the user's shell start-up files as well.
package shell

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/krad-ade/krad/internal/termsafe"
)

// Quote quotes s as one word for a POSIX shell: inside single quotes, each single quote in s
// written as a quote that closes, an escaped quote, and a quote that reopens.
// fish and tcsh read it the same way, provided s has no newline (tcsh) and no backslash followed by
// a backslash or a quote (fish): callers pass only names and paths they have checked.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Word is s as one word for a POSIX shell, quoted by [Quote] only when it needs to be: for
// command lines shown to a person (a hint's chmod, an ssh command to attach), which read best
// bare. s is bare when it is made of letters, digits and _ . / + @ % , : = - only, and does not
// start with '=' (which zsh expands into a command's path).
func Word(s string) string {
	if s == "" || s[0] == '=' || strings.ContainsFunc(s, func(r rune) bool { return !plain(r) }) {
		return Quote(s)
	}
	return s
}

// plain says whether r means nothing to a POSIX shell (bash, dash, zsh) in a word.
func plain(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("_./+@%,:=-", r)
}

// Script is a sh script that reports through one frame of marker lines.
type Script struct {
	// Name names the frame's markers: __KRAD_<Name>_BEGIN__ and __KRAD_<Name>_END__. Upper case
	// letters and digits.
	Name string
	// Body runs after the [Prelude], with the arguments as $1, $2, …. It is joined into one line:
	// each statement ends with ";" (or a keyword like then, do, {), and there are no comments.
	Body string
}

// Prelude defines the functions a [Script.Body] calls. krad_say prints the frame, one line per
// argument; krad_fail and krad_refuse print a verdict and exit; krad_enter NAME SHOWN enters the
// folder NAME of the current folder (SHOWN is how errors name it, like "~/.krad-ade"), creating it
// if it is missing, refusing a symbolic link, a non-folder, or a folder of another user, and making
// it owner-only. It checks the folder's owner again once inside, where it cannot be swapped.
// krad_enters SHOWN NAME… enters each NAME in turn as krad_enter does (the first shown as
// SHOWN/NAME, each next one under it), and then makes them all owner-only with one chmod, from the
// last: of ".", "..", "../..", the folders entered themselves, which no rename or symbolic link
// can swap for others. A script runs at every connect, and each chmod is a program started:
// neither chmods a folder that [Batch.Command] found owner-only already (KRAD_OWNONLY, the
// folders of its steps' [Step.Folders] that its one stat found to be folders of mode 0700).
// After either, $PWD is the folder's path with no symbolic link in it (cd -P sets it so), as
// pwd -P would print it.
const Prelude = `
krad_say() { printf '%s\n' "$KRAD_BEGIN" "$@" "$KRAD_END"; };
krad_fail() { krad_say failed "$1"; exit 1; };
krad_refuse() { krad_say refused "$1" "$2"; exit 3; };
krad_into() {
  if [ -L "$1" ]; then krad_refuse symlink "$2"; fi;
  if [ ! -e "$1" ]; then mkdir "$1" || [ -d "$1" ] || krad_fail "create $2"; fi;
  if [ -L "$1" ]; then krad_refuse symlink "$2"; fi;
  if [ ! -d "$1" ]; then krad_refuse notdir "$2"; fi;
  if [ ! -O "$1" ]; then krad_refuse owner "$2"; fi;
  cd -P "$1" || krad_fail "enter $2";
  if [ ! -O . ]; then krad_refuse owner "$2"; fi;
};
krad_ownonly() { case " $KRAD_OWNONLY " in *" $1 "*) return 0;; esac; return 1; };
krad_enter() { krad_into "$1" "$2"; krad_ownonly "$2" || chmod 700 . || krad_fail "make $2 owner-only"; };
krad_enters() {
  krad_at=$1; krad_top=; krad_up=; krad_p=.; krad_loose=; shift;
  for krad_f in "$@"; do
    krad_at="$krad_at/$krad_f"; krad_top=${krad_top:-$krad_at};
    krad_into "$krad_f" "$krad_at";
    krad_ownonly "$krad_at" || krad_loose=1;
    krad_up="$krad_up $krad_p"; krad_p="$krad_p/..";
  done;
  if [ -n "$krad_loose" ]; then chmod 700 $krad_up || krad_fail "make $krad_at and the folders above it up to $krad_top owner-only"; fi;
};
krad_words() { krad_w="$*"; };
krad_home() {
  if [ -z "${HOME:-}" ]; then krad_fail "find the home folder: HOME is not set"; fi;
  cd -P "$HOME" || krad_fail "enter the home folder";
};
`

// SHA256 defines krad_sha FILE, which prints the file's SHA-256 in lowercase hex, with the host's
// command for it: sha256sum (coreutils, busybox), shasum (perl), or openssl. A [Script.Body] that
// hashes starts with it; on a host with none of the three, that script fails (krad_fail).
const SHA256 = `
if command -v sha256sum >/dev/null 2>&1; then KRAD_SUM=sha256sum;
elif command -v shasum >/dev/null 2>&1; then KRAD_SUM="shasum -a 256";
elif command -v openssl >/dev/null 2>&1; then KRAD_SUM="openssl dgst -sha256 -r";
else krad_fail "hash files: the host has none of sha256sum, shasum and openssl"; fi;
krad_sha() { h=$($KRAD_SUM < "$1") || return 1; echo "${h%% *}"; };
`

// Begin is the frame's first marker line, without its newline.
func (s Script) Begin() string { return "__KRAD_" + s.Name + "_BEGIN__" }

// End is the frame's last marker line, without its newline.
func (s Script) End() string { return "__KRAD_" + s.Name + "_END__" }

// Command is the command line that runs the script under sh with args as $1, $2, …: one line,
// for the login shell of the host to run. It panics on a script it cannot carry unchanged through
// every login shell (a backslash other than in \n), which is a mistake in the program.
func (s Script) Command(args ...string) string {
	s.checkName()
	return command(s.script(), args)
}

// checkName panics on a name that cannot name a frame's markers.
func (s Script) checkName() {
	if s.Name == "" || strings.IndexFunc(s.Name, func(r rune) bool { return !('A' <= r && r <= 'Z' || '0' <= r && r <= '9') }) >= 0 {
		panic("shell: a script's name is upper case letters and digits: " + strconv.Quote(s.Name))
	}
}

// command is the command line that runs script, one line, under sh with args as $1, $2, ….
func command(script string, args []string) string {
	checkBackslash(script)
	var b strings.Builder
	b.WriteString("sh -c ")
	b.WriteString(Quote(script))
	b.WriteString(" sh")
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(Quote(a))
	}
	return b.String()
}

// checkBackslash panics on a script with a backslash other than in \n, which not every login
// shell reads alike: a mistake in the program.
func checkBackslash(script string) {
	if strings.Contains(strings.ReplaceAll(script, `\n`, ""), `\`) {
		panic("shell: a script may use a backslash only in \\n")
	}
}

// script is the whole script, on one line.
func (s Script) script() string {
	return oneLine("KRAD_BEGIN=" + s.Begin() + "; KRAD_END=" + s.End() + "; KRAD_OWNONLY=;\n" + Prelude + s.Body)
}

// oneLine joins the script's lines with spaces, for login shells (tcsh) that refuse a newline
// inside quotes.
func oneLine(script string) string {
	var lines []string
	for l := range strings.Lines(script) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, " ")
}

// Frame returns the lines the script printed between its markers. Output before the begin marker
// (even on the same line) and after the end marker is ignored; a missing marker is a
// [*NoiseError].
func (s Script) Frame(stdout []byte) ([]string, error) {
	out := string(stdout)
	begin := s.Begin() + "\n"
	i := strings.Index(out, begin)
	if i < 0 {
		return nil, &NoiseError{Output: termsafe.Cut(out, maxNoise), Missing: s.Begin()}
	}
	rest := out[i+len(begin):]
	var lines []string
	for l := range strings.Lines(rest) {
		l = strings.TrimSuffix(l, "\n")
		if l == s.End() {
			return lines, nil
		}
		lines = append(lines, l)
	}
	return nil, &NoiseError{Output: termsafe.Cut(rest, maxNoise), Missing: s.End(), Began: true}
}

// Result reads how a run of the script ended, from its stdout and the error of the run (nil when
// it exited 0): the lines after "ok", or an error. A failure wraps runErr, which holds the
// script's stderr; a run that printed no frame gives runErr if there is one, else a *NoiseError.
func (s Script) Result(stdout []byte, runErr error) ([]string, error) {
	lines, err := s.Frame(stdout)
	if err != nil {
		if runErr != nil {
			return nil, runErr
		}
		return nil, err
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("the host's script printed an empty report: %w", errOr(runErr))
	}
	switch verdict, rest := lines[0], lines[1:]; verdict {
	case "ok":
		if runErr != nil {
			return nil, fmt.Errorf("the host's script reported success, then failed: %w", runErr)
		}
		return rest, nil
	case "refused":
		if len(rest) != 2 {
			break
		}
		return nil, &RefusedError{Path: rest[1], Reason: rest[0]}
	case "failed":
		if len(rest) != 1 {
			break
		}
		return nil, fmt.Errorf("%s: %w", termsafe.Escape(rest[0], maxShown), errOr(runErr))
	}
	return nil, fmt.Errorf("the host's script gave an unknown report %q", termsafe.Shorten(strings.Join(lines, "\n"), maxShown))
}

// errOr is err, or an error that says there was none to show.
func errOr(err error) error {
	if err == nil {
		return errors.New("the script exited 0")
	}
	return err
}

// RefusedError says that a folder or file under ~/.krad-ade is not safe to use. Nothing was
// written.
type RefusedError struct {
	Path   string // as the user would type it, like ~/.krad-ade/run
	Reason string // symlink, notdir, notfile, owner, elsewhere, or another word a script chose
}

func (e *RefusedError) Error() string {
	p := termsafe.Escape(e.Path, maxShown)
	switch e.Reason {
	case "symlink":
		return p + " is a symbolic link: refused; remove it"
	case "notdir":
		return p + " is not a folder: refused; remove it"
	case "notfile":
		return p + " is not a regular file: refused; remove it"
	case "owner":
		return p + " is owned by another user: refused; remove it (as its owner or root)"
	case "elsewhere":
		return p + " is not in this host's ~/.krad-ade/run: refused"
	}
	return p + ": refused (" + termsafe.Escape(e.Reason, maxShown) + ")"
}

// NoiseError says that the host's output did not hold the frame the script prints. The usual cause
// is a shell start-up file that prints, or exits, in non-interactive shells.
type NoiseError struct {
	Output  string // what came instead, shortened to at most 4 KiB
	Missing string // the marker that never came
	Began   bool   // whether the begin marker came: then Output is what followed it
}

func (e *NoiseError) Error() string {
	switch {
	case e.Began:
		return fmt.Sprintf("the host's output stopped before %s, after %q: the command was cut short", e.Missing, termsafe.Shorten(e.Output, maxShown))
	case e.Output == "":
		return "the host's shell printed nothing, not even our command's first line: check that the login shell runs commands (ssh HOST echo hello)"
	}
	return fmt.Sprintf("the host's shell printed %q, and not our command's first line: check ~/.bashrc and ~/.profile for output (or exit) in non-interactive shells", termsafe.Shorten(e.Output, maxShown))
}

// maxShown is how much of something from the host an error message shows, and maxNoise how much
// of what came instead of a frame a *NoiseError holds.
const (
	maxShown = 200
	maxNoise = 4 << 10
)
