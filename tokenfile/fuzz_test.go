package tokenfile

import (
	"bytes"
	"errors"
	"strings"
	"testing"
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
