package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/krad-ade/krad/internal/termsafe"
)

// maxQuoted is how much of a piece of input an error quotes.
const maxQuoted = 40

// quote is how input (an argument, a variable) goes into an error: cut to maxQuoted bytes and
// Go-quoted, so that it can neither flood the terminal nor act on it.
func quote(s string) string {
	return strconv.Quote(termsafe.Shorten(s, maxQuoted))
}

// maxLine is the longest error line krad prints; an app's message can be long.
const maxLine = 1000

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
