package remote

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable escapes what is not graphic in s and shortens it to about max bytes: for text from the
// host inside a message.
func printable(s string, max int) string {
	var b strings.Builder
	for i, r := range s {
		if b.Len() >= max {
			b.WriteString("…")
			break
		}
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsGraphic(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// shorten keeps the first max bytes of s, marking a cut with "…", for a message that %q then
// escapes.
func shorten(s string, max int) string {
	if len(s) > max {
		return strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}
