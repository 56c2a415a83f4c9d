package knownhosts

import (
	"crypto/ed25519"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
)

// FuzzMatchHostPatterns holds matchHostPatterns, which reads the host patterns of known_hosts'
// @cert-authority lines, to what knownhosts decides for the same patterns on a plain line.
// Inputs are kept short: knownhosts' own matcher takes exponential time on long runs of *.
func FuzzMatchHostPatterns(f *testing.F) {
	for _, s := range []struct{ patterns, host, port string }{
		{"127.0.0.1", "127.0.0.1", "22"},
		{"[127.0.0.1]:2222", "127.0.0.1", "2222"},
		{"*.example.com,!bad.example.com", "bad.example.com", "22"},
		{"a*", "a", "22"},
		{"*", "x", "22"},
		{"a*b*c", "abc", "22"},
		{"?", "", "22"},
		{"[::1]:2222", "::1", "2222"},
	} {
		f.Add(s.patterns, s.host, s.port)
	}
	ca, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	probeKey := make([]byte, ed25519.PublicKeySize)
	probeKey[0] = 1
	probe, _ := ssh.NewPublicKey(ed25519.PublicKey(probeKey))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, patterns, host, port string) {
		if len(patterns) > 24 || len(host) > 16 || host == "" ||
			strings.ContainsAny(patterns, " \t\r\n#") || strings.HasPrefix(patterns, "@") || strings.ContainsAny(host, " \t\r\n[]") ||
			(port != "22" && port != "2222") {
			return
		}
		file := filepath.Join(dir, "known_hosts")
		if err := os.WriteFile(file, []byte(patterns+" "+string(ssh.MarshalAuthorizedKey(ca))), 0o600); err != nil {
			t.Fatal(err)
		}
		want := false
		if db, err := xknownhosts.New(file); err == nil {
			var ke *xknownhosts.KeyError
			want = errors.As(db(net.JoinHostPort(host, port), dummyAddr, probe), &ke) && len(ke.Want) > 0
		}
		if got := matchHostPatterns(strings.Split(patterns, ","), host, port); got != want {
			t.Errorf("patterns %q on %s: matched %v, knownhosts says %v", patterns, net.JoinHostPort(host, port), got, want)
		}
	})
}

// TestWildcardMatchLongPattern: a pattern of many * against a long name that it does not match
// is answered (a backtracking matcher would not be, before the test's deadline), and rightly.
func TestWildcardMatchLongPattern(t *testing.T) {
	name := strings.Repeat("a", 250)
	if wildcardMatch(strings.Repeat("*a", 40)+"b", name) {
		t.Error("(*a)×40 b matched a name without b")
	}
	if !wildcardMatch(strings.Repeat("*a", 40), name) {
		t.Error("(*a)×40 did not match 250 a's")
	}
}
