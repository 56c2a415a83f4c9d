package remote

import (
	"strings"
)

// shorten keeps the first max bytes of s, marking a cut with "…", for a message that %q then
// escapes.
func shorten(s string, max int) string {
	if len(s) > max {
		return strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}
