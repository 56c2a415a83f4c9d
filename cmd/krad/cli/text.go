package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxQuoted is how much of a piece of input an error quotes.
const maxQuoted = 40

// quote is how input (an argument, a variable) goes into an error: cut to maxQuoted bytes and
// Go-quoted, so that it can neither flood the terminal nor act on it.
func quote(s string) string {
	if len(s) > maxQuoted {
		s = s[:maxQuoted] + "…"
	}
	return strconv.Quote(s)
}

// maxLine is the longest error line krad prints; an app's message can be long.
const maxLine = 1000

// printable escapes what a terminal would act on in s (control characters, invalid UTF-8) and
// cuts it to max bytes. It is the last guard on every line krad prints from text it did not
// write itself: an app's build or error message, a flag library's message.
func printable(s string, max int) string {
	var b strings.Builder
	for i, r := range s {
		if b.Len() >= max {
			b.WriteString("…")
			break
		}
		switch {
		case r == utf8.RuneError && isInvalid(s[i:]):
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

// isInvalid reports whether s starts with a byte that is not valid UTF-8.
func isInvalid(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError && size == 1
}

// abbreviate writes path with the home folder as ~, the way people read their own paths.
func abbreviate(path, home string) string {
	if home == "" || home == string(filepath.Separator) {
		return path
	}
	home = filepath.Clean(home)
	if path == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(path, home+string(filepath.Separator)); ok {
		return "~" + string(filepath.Separator) + rest
	}
	return path
}

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// formatRows aligns "key  value" lines, each after indent.
func formatRows(rows [][2]string, indent string) string {
	width := 0
	for _, r := range rows {
		width = max(width, utf8.RuneCountInString(r[0]))
	}
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(strings.TrimRight(fmt.Sprintf("%s%-*s  %s", indent, width, r[0], r[1]), " ") + "\n")
	}
	return b.String()
}
