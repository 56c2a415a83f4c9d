package knownhosts

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
)

// newKey is a new public key of type typ: "ed25519" or "rsa".
func newKey(t testing.TB, typ string) ssh.PublicKey {
	t.Helper()
	var pub any
	switch typ {
	case "ed25519":
		p, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		pub = p
	case "rsa":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		pub = &k.PublicKey
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestHostKeyAlgorithmsWithCA(t *testing.T) {
	rsa, ca := newKey(t, "rsa"), newKey(t, "ed25519")
	known := []xknownhosts.KnownKey{{Key: rsa}}

	without := (&Checker{known: known}).Algorithms()
	if i := slices.IndexFunc(without, func(a string) bool { return strings.Contains(a, "-cert-") }); i >= 0 {
		t.Errorf("without a CA, algorithms = %q: certificate %s asked for", without, without[i])
	}
	if without[0] != ssh.KeyAlgoRSASHA512 {
		t.Errorf("algorithms = %q, want the known key's type first", without)
	}

	with := (&Checker{known: known, cas: []xknownhosts.KnownKey{{Key: ca}}}).Algorithms()
	if with[0] != ssh.CertAlgoRSASHA512v01 || !slices.Contains(with, ssh.CertAlgoED25519v01) {
		t.Errorf("with a CA, algorithms = %q, want certificates first, the known type's first of all", with)
	}
	firstPlain := slices.IndexFunc(with, func(a string) bool { return !strings.Contains(a, "-cert-") })
	if slices.ContainsFunc(with[firstPlain:], func(a string) bool { return strings.Contains(a, "-cert-") }) || with[firstPlain] != ssh.KeyAlgoRSASHA512 {
		t.Errorf("with a CA, algorithms = %q, want every certificate before the plain keys, the known type first", with)
	}
}

// The @cert-authority lines' host patterns are matched as knownhosts matches its other lines:
// each pattern is tried on a line of knownhosts' own.
func TestMatchHostPatterns(t *testing.T) {
	key, probe := newKey(t, "ed25519"), newKey(t, "ed25519")
	patterns := []string{
		"127.0.0.1", "[127.0.0.1]:2222", "[127.0.0.1]:22", "*", "127.0.0.*", "127.0.0.?", "*.example.com",
		"build.example.com,!bad.example.com", "!bad.example.com,*.example.com", "*,![127.0.0.1]:2222",
		"BUILD.example.com", "[::1]:2222", "::1", "127.0.0.1:2222",
		// Lines knownhosts leaves out: they match nothing.
		"127.0.0.1,!", "[127.0.0.1:2222,127.0.0.1",
		xknownhosts.HashHostname("[127.0.0.1]:2222"), xknownhosts.HashHostname("build.example.com"),
	}
	addrs := []string{"127.0.0.1:22", "127.0.0.1:2222", "bad.example.com:22", "build.example.com:22", "[::1]:2222", "[::1]:22"}
	for _, p := range patterns {
		file := filepath.Join(t.TempDir(), "known_hosts")
		os.WriteFile(file, []byte(p+" "+string(ssh.MarshalAuthorizedKey(key))), 0o600)
		db, err := xknownhosts.New(file)
		for _, a := range addrs {
			var ke *xknownhosts.KeyError
			want := err == nil && errors.As(db(a, dummyAddr, probe), &ke) && len(ke.Want) > 0
			host, port, _ := net.SplitHostPort(a)
			if got := matchHostPatterns(strings.Split(p, ","), host, port); got != want {
				t.Errorf("pattern %q on %s: matched %v, knownhosts says %v", p, a, got, want)
			}
		}
	}
}
