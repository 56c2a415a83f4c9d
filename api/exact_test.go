package api

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// exactSeeds are strings of the kinds the exact-bytes rule is for: plain names, names in no
// encoding, patches with JSON's escapes and control characters.
var exactSeeds = []string{
	"", "README", "caf\xe9", "two\nlines", "\xff\xfe", "a\u2028b\u2029", `"<>&\`, "\x00\x01\x1f",
	"diff --git a/x b/x\n+\tline\n", "\xed\xa0\x80", "\uFFFD", "日本語",
}

// FuzzExact: for any bytes, SplitName and SplitText give a wire form that JoinExact turns back
// into the same bytes; a name's text is what encoding/json makes of it, and valid UTF-8; a text is
// one of the two forms, and its wire size is never more than base64's.
func FuzzExact(f *testing.F) {
	for _, s := range exactSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		text, b64 := SplitName(s)
		if got, err := JoinExact("path", text, b64); err != nil || got != s {
			t.Fatalf("JoinExact(SplitName(%q)) = %q, %v", s, got, err)
		}
		if !utf8.ValidString(text) {
			t.Fatalf("SplitName(%q): text %q is not UTF-8", s, text)
		}
		if utf8.ValidString(s) != (b64 == "" && text == s) {
			t.Fatalf("SplitName(%q) = %q, %q: base64 must come exactly when the name is not UTF-8", s, text, b64)
		}
		var viaJSON string
		data, _ := json.Marshal(s)
		if err := json.Unmarshal(data, &viaJSON); err != nil || viaJSON != text {
			t.Fatalf("SplitName(%q): text %q, but encoding/json makes %q of it", s, text, viaJSON)
		}

		text, b64 = SplitText(s)
		if got, err := JoinExact("patch", text, b64); err != nil || got != s {
			t.Fatalf("JoinExact(SplitText(%q)) = %q, %v", s, got, err)
		}
		if text != "" && b64 != "" {
			t.Fatalf("SplitText(%q) = %q, %q: both forms", s, text, b64)
		}
		if b64 == "" {
			data, err := json.Marshal(text)
			if err != nil || text != s || len(data)-2 > base64.StdEncoding.EncodedLen(len(s)) {
				t.Fatalf("SplitText(%q) = text %q, %d bytes in JSON (%v); want s, no longer than its base64 (%d)",
					s, text, len(data)-2, err, base64.StdEncoding.EncodedLen(len(s)))
			}
		}
	})
}

// FuzzJoinExact: whatever a peer sends, JoinExact never panics, and its error names the field
// without repeating what was sent.
func FuzzJoinExact(f *testing.F) {
	for _, s := range []string{"", "Y2Fm6Q==", "not base64", "YQ", "YQ==\n", "====", "\xff"} {
		f.Add("text", s)
	}
	f.Fuzz(func(t *testing.T, text, b64 string) {
		got, err := JoinExact("path", text, b64)
		switch {
		case err != nil:
			if err.Error() != "path_base64 is not standard base64" {
				t.Fatalf("JoinExact(%q, %q): error %q", text, b64, err)
			}
		case b64 == "" && got != text:
			t.Fatalf("JoinExact(%q, \"\") = %q, want the text", text, got)
		case b64 != "":
			want, _ := base64.StdEncoding.DecodeString(b64)
			if got != string(want) {
				t.Fatalf("JoinExact(%q, %q) = %q, want %q", text, b64, got, want)
			}
		}
	})
}
