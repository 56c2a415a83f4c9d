//go:build unix

package tokenfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/krad-ade/krad/internal/fileacl"
	"github.com/krad-ade/krad/kradtest/testbin"
)

const token = "6f1c0d9e2b7a4c58e3f09a1d7b6c2e40"

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode passes through the umask
		t.Fatal(err)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	q := func(name string) string { return `"` + path(name) + `"` }

	write(t, path("ok"), token, 0o600)
	write(t, path("newline"), token+"\n", 0o600)
	write(t, path("readonly"), token+"\n", 0o400)
	write(t, path("0644"), token, 0o644)
	write(t, path("0640"), token, 0o640)
	write(t, path("0604"), token, 0o604)
	write(t, path("0610"), token, 0o610)
	write(t, path("upper"), strings.ToUpper(token), 0o600)
	write(t, path("short"), token[:31], 0o600)
	write(t, path("long"), token+"0", 0o600)
	write(t, path("two-newlines"), token+"\n\n", 0o600)
	write(t, path("crlf"), token+"\r\n", 0o600)
	write(t, path("space"), " "+token, 0o600)
	write(t, path("empty"), "", 0o600)
	write(t, path("big"), strings.Repeat(token, 1000), 0o600)
	if err := os.Symlink(path("ok"), path("link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path("dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		wantErr string // "" for success
	}{
		{"ok", ""},
		{"newline", ""},
		{"readonly", ""},
		{"0644", "token file " + q("0644") + " has mode 0644: it must be owner-only (chmod 600 " + q("0644") + ")"},
		{"0640", "token file " + q("0640") + " has mode 0640: it must be owner-only (chmod 600 " + q("0640") + ")"},
		{"0604", "token file " + q("0604") + " has mode 0604: it must be owner-only (chmod 600 " + q("0604") + ")"},
		{"0610", "token file " + q("0610") + " has mode 0610: it must be owner-only (chmod 600 " + q("0610") + ")"},
		{"upper", "token file " + q("upper") + " does not hold a token: " + ErrMalformed.Error()},
		{"short", "token file " + q("short") + " does not hold a token: " + ErrMalformed.Error()},
		{"long", "token file " + q("long") + " does not hold a token: " + ErrMalformed.Error()},
		{"two-newlines", "token file " + q("two-newlines") + " does not hold a token: " + ErrMalformed.Error()},
		{"crlf", "token file " + q("crlf") + " does not hold a token: " + ErrMalformed.Error()},
		{"space", "token file " + q("space") + " does not hold a token: " + ErrMalformed.Error()},
		{"empty", "token file " + q("empty") + " does not hold a token: " + ErrMalformed.Error()},
		{"big", "token file " + q("big") + " does not hold a token: " + ErrMalformed.Error()},
		{"link", "token file " + q("link") + " is a symbolic link: name the file itself"},
		{"dir", "token file " + q("dir") + " is not a regular file"},
		{"fifo", "token file " + q("fifo") + " is not a regular file"},
		{"missing", "token file " + q("missing") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := Read(path(tt.name))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("got error %q, want none", err)
				}
				if got := tok.Reveal(); got != token {
					t.Errorf("got token %q, want %q", got, token)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want %q", tt.wantErr)
			}
			if got := err.Error(); got != tt.wantErr {
				t.Errorf("got error %q, want %q", got, tt.wantErr)
			}
			if strings.Contains(err.Error(), token[:8]) || strings.Contains(strings.ToLower(err.Error()), token[:8]) {
				t.Errorf("the error %q holds the file's content", err)
			}
			if !tok.IsZero() {
				t.Errorf("got a token with the error, want none")
			}
		})
	}
}

func TestReadErrorKinds(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	write(t, bad, "not a token", 0o600)
	if _, err := Read(bad); !errors.Is(err, ErrMalformed) {
		t.Errorf("malformed: got %v, want an error that is ErrMalformed", err)
	}
	if _, err := Read(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: got %v, want an error that is fs.ErrNotExist", err)
	}
}

func TestReadRefusesAnotherOwner(t *testing.T) {
	testbin.NeedRoot(t, "making a file that another user owns")
	path := filepath.Join(t.TempDir(), "theirs")
	write(t, path, token, 0o600)
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path)
	want := `token file "` + path + `" is owned by uid 65534, not by you (uid 0)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestReadQuotesThePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a\x1b[31mred\nname")
	write(t, path, token, 0o644)
	_, err := Read(path)
	if err == nil {
		t.Fatal("got no error, want one about the mode")
	}
	if strings.ContainsAny(err.Error(), "\x1b\n") {
		t.Errorf("got %q, want the path's control characters escaped", err)
	}
}

// TestReadRefusesAnACL: on macOS, where the mode does not show it, a token file whose ACL allows
// another user anything is refused as a loose mode is; a deny entry is fine. (readACL reads
// nothing on Linux: here the test hands Read macOS's answers.)
func TestReadRefusesAnACL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	write(t, path, token, 0o600)
	old := readACL
	t.Cleanup(func() { readACL = old })
	bob := [16]byte{0xab, 0xcd}
	readACL = func(string) ([]fileacl.Entry, error) {
		return []fileacl.Entry{{Who: bob, Flags: fileacl.Deny, Rights: fileacl.ReadData}}, nil
	}
	if _, err := Read(path); err != nil {
		t.Errorf("a deny entry: %v", err)
	}
	readACL = func(string) ([]fileacl.Entry, error) {
		return []fileacl.Entry{{Who: bob, Flags: fileacl.Permit, Rights: fileacl.ReadData}}, nil
	}
	want := `token file "` + path + `" has an ACL that grants others access (ls -le shows it): it must be owner-only (chmod -N "` + path + `")`
	if _, err := Read(path); err == nil || err.Error() != want {
		t.Errorf("an entry that allows reading: got %v, want %q", err, want)
	}
}
