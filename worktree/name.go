package worktree

import (
	"fmt"
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// MaxNameLen is the longest group name.
const MaxNameLen = 40

// BranchPrefix is put before a group's name to make the branch the app creates for it.
const BranchPrefix = "krad/"

// SnapshotPrefix is put before a group's name to make the ref its snapshot of uncommitted work
// is kept on when it retires.
const SnapshotPrefix = "refs/krad/snapshots/"

// ValidName says whether name may name a group: [a-z0-9][a-z0-9-]{0,39}. Such a name is safe in
// a path, a branch name and a ref, and on a command line. The error says what is wrong, and wraps
// [ErrBadName].
func ValidName(name string) error {
	why := ""
	switch {
	case name == "":
		why = "it is empty"
	case len(name) > MaxNameLen:
		why = fmt.Sprintf("it has %d characters, more than %d", len(name), MaxNameLen)
	case name[0] == '-':
		why = "it starts with -"
	default:
	chars:
		for i := 0; i < len(name); i++ {
			c := name[i]
			if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
				continue
			}
			switch {
			case c >= 'A' && c <= 'Z':
				why = "it has an upper-case letter"
			case c == '/':
				why = "it has a /"
			case c == '.':
				why = "it has a ."
			case c == ' ':
				why = "it has a space"
			default:
				why = "it has a character other than a-z, 0-9 and -"
			}
			break chars
		}
	}
	if why == "" {
		return nil
	}
	return badInput(fmt.Sprintf("group name %s: %s (a group name is 1 to %d of a-z, 0-9 and -, not starting with -)",
		termsafe.QuoteMax(name, 60), why, MaxNameLen))
}

// MaxRefLen is the longest base or branch name accepted.
const MaxRefLen = 200

// ValidRef makes the first checks of a base or branch name from outside, before git sees it:
// not empty, not starting with - (which git would take for an option), no control character or
// space, at most MaxRefLen bytes. git checks the rest (git check-ref-format, rev-parse). The
// error wraps [ErrBadName].
func ValidRef(what, ref string) error {
	why := ""
	switch {
	case ref == "":
		why = "it is empty"
	case len(ref) > MaxRefLen:
		why = fmt.Sprintf("it is longer than %d bytes", MaxRefLen)
	case ref[0] == '-':
		why = "it starts with -"
	case strings.ContainsFunc(ref, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		why = "it has a space or a control character"
	}
	if why == "" {
		return nil
	}
	return badInput(fmt.Sprintf("%s %s: %s", what, termsafe.QuoteMax(ref, 60), why))
}

func badInput(msg string) error {
	return api.Errorf(api.CodeBadRequest, "%s", msg).WithCause(ErrBadName)
}
