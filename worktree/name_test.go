package worktree

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

func TestValidName(t *testing.T) {
	for _, tt := range []struct {
		name string
		want string // part of the error; "" for a valid name
	}{
		{"fix-retry", ""},
		{"a", ""},
		{"0", ""},
		{strings.Repeat("a", 40), ""},
		{"", "empty"},
		{strings.Repeat("a", 41), "41 characters"},
		{"fix/retry", "has a /"},
		{"..", "has a ."},
		{"a..b", "has a ."},
		{"fix retry", "has a space"},
		{"Fix", "upper-case"},
		{"-x", "starts with -"},
		{"x\n", "other than"},
		{"é", "other than"},
		{"a_b", "other than"},
	} {
		err := ValidName(tt.name)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ValidName(%q) = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("ValidName(%q) = %v, want an error saying %q", tt.name, err, tt.want)
		case tt.want != "" && !errors.Is(err, ErrBadName):
			t.Errorf("ValidName(%q) = %v, want it to wrap ErrBadName", tt.name, err)
		}
	}
}

func TestValidRef(t *testing.T) {
	for _, tt := range []struct {
		ref string
		ok  bool
	}{
		{"main", true}, {"HEAD~2", true}, {"v1.0", true}, {"feature/x", true},
		{"", false}, {"-x", false}, {"--upload-pack=x", false}, {"a b", false}, {"a\nb", false},
		{strings.Repeat("a", MaxRefLen+1), false},
	} {
		if err := ValidRef("base", tt.ref); (err == nil) != tt.ok {
			t.Errorf("ValidRef(%q) = %v, want ok=%v", tt.ref, err, tt.ok)
		}
	}
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

func FuzzValidName(f *testing.F) {
	for _, s := range []string{"fix-retry", "", "..", "a/b", "A", strings.Repeat("z", 41), "-a", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidName(name)
		if want := nameRE.MatchString(name); (err == nil) != want {
			t.Fatalf("ValidName(%q) = %v, want ok=%v", name, err, want)
		}
		if err == nil {
			return
		}
		var e *api.Error
		if !errors.Is(err, ErrBadName) || !errors.As(err, &e) || e.Code != api.CodeBadRequest {
			t.Fatalf("ValidName(%q) = %#v, want a bad_request wrapping ErrBadName", name, err)
		}
		if strings.ContainsAny(e.Message, "\n\r\x00") {
			t.Fatalf("ValidName(%q): the message carries a control character: %q", name, e.Message)
		}
	})
}

func TestCommandName(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"worktree", "add", "--lock", "x"}, "worktree add"},
		{[]string{"--literal-pathspecs", "diff-tree", "-p", "a", "b"}, "diff-tree"},
		{[]string{"rev-parse", "--verify", "HEAD"}, "rev-parse"},
		{[]string{"merge-base", "abc", "refs/heads/x"}, "merge-base"},
		{[]string{"--version"}, ""},
	} {
		if got := commandName(tt.args); got != tt.want {
			t.Errorf("commandName(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func FuzzValidRef(f *testing.F) {
	for _, s := range []string{"main", "HEAD~2", "-x", "--upload-pack=evil", "a b", "a\x00b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		err := ValidRef("base", ref)
		if err != nil {
			if !errors.Is(err, ErrBadName) {
				t.Fatalf("ValidRef(%q) = %v, want it to wrap ErrBadName", ref, err)
			}
			if strings.ContainsAny(err.Error(), "\n\r\x00") {
				t.Fatalf("ValidRef(%q): the message carries a control character: %q", ref, err)
			}
			return
		}
		if ref == "" || ref[0] == '-' || len(ref) > MaxRefLen || strings.ContainsAny(ref, " \t\n\r\x00\x7f") {
			t.Fatalf("ValidRef(%q) = nil, want an error", ref)
		}
	})
}
