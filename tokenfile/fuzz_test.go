package tokenfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"6f1c0d9e2b7a4c58e3f09a1d7b6c2e40",
		"6f1c0d9e2b7a4c58e3f09a1d7b6c2e40\n",
		"6f1c0d9e2b7a4c58e3f09a1d7b6c2e40\n\n",
		"6F1C0D9E2B7A4C58E3F09A1D7B6C2E40",
		"6f1c0d9e2b7a4c58e3f09a1d7b6c2e4",
		"",
		"\n",
		"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := parse(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got error %v, want ErrMalformed", err)
			}
			if s := strings.TrimSpace(string(b)); len(s) >= 4 && strings.Contains(err.Error(), s) {
				t.Fatalf("the error %q holds the content", err)
			}
			if !tok.IsZero() {
				t.Fatal("got a token with the error")
			}
			return
		}
		v := tok.Reveal()
		if got, want := string(b), v; got != want && got != want+"\n" {
			t.Fatalf("parsed %q into %q: want the content, less one newline", b, v)
		}
		if len(v) != 32 || bytes.ContainsFunc([]byte(v), func(r rune) bool {
			return !('0' <= r && r <= '9' || 'a' <= r && r <= 'f')
		}) {
			t.Fatalf("parsed %q into %q: want 32 lowercase hex digits", b, v)
		}
	})
}

// FuzzReadCheck: whatever the host reports for the look at the token file, ReadCheck says the file
// holds the token only for a token file's path and the token's own digest, and an error never
// holds what the host sent past the bound.
func FuzzReadCheck(f *testing.F) {
	tok, err := api.NewToken()
	if err != nil {
		f.Fatal(err)
	}
	sum := sha256.Sum256([]byte(tok.Reveal() + "\n"))
	digest := hex.EncodeToString(sum[:])
	for _, seed := range []string{
		"stale",
		"/home/u/.krad-ade/run/main/token\n" + digest,
		"/home/u/.krad-ade/run/main/token\n" + strings.ToUpper(digest),
		"/home/u/.krad-ade/run/main/token\n" + digest[:10],
		"/home/u/.krad-ade/run/other/token\n" + digest,
		"relative/.krad-ade/run/main/token\n" + digest,
		"/home/u/.krad-ade/run/main/token",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rep := strings.Split(s, "\n")
		path, holds, err := ReadCheck("main", tok, rep, nil)
		if err != nil {
			if holds || path != "" {
				t.Fatalf("got %q, holds %v with the error %v", path, holds, err)
			}
			// What the host sent is cut to maxShown bytes and quoted (4 bytes at most for each).
			if msg := err.Error(); len(msg) > 4*maxShown+200 || strings.ContainsFunc(msg, func(r rune) bool { return r < ' ' || r == 0x7f }) {
				t.Fatalf("the error is %d bytes long, or holds a control character: %q", len(msg), msg)
			}
			return
		}
		if holds {
			if len(rep) != 2 || !isTokenPath(rep[0], "main") || !strings.EqualFold(rep[1], digest) || path != rep[0] {
				t.Fatalf("%q: held, at %q", s, path)
			}
		}
	})
}
