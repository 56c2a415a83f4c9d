package remote

import "github.com/krad-ade/krad/internal/termsafe"

// shorten is termsafe.Shorten, for env.go's messages. (Left as a name while the terminal
// variables move out of this package; new code calls termsafe.Shorten.)
func shorten(s string, max int) string { return termsafe.Shorten(s, max) }
