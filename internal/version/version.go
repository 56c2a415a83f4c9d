// Package version holds the build of krad's programs, one value for all of them: the app answers
// it in Hello, the CLI prints it, and the static CLI installed on hosts is pinned to it.
package version

// Build is the release, stamped at link time with
// -ldflags "-X github.com/krad-ade/krad/internal/version.Build=…" when a release wants another.
var Build = "0.1.0"
