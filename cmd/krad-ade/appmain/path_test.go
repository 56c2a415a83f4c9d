package appmain

import (
	"slices"
	"testing"
)

// TestFullPath: on macOS, the package managers' folders that exist and PATH lacks are appended,
// in a login shell's order, after what PATH holds; on Linux PATH stays as it is.
func TestFullPath(t *testing.T) {
	brew := func(d string) bool { return d == "/opt/homebrew/bin" || d == "/usr/local/bin" }
	for _, tt := range []struct {
		name, path, goos string
		isDir            func(string) bool
		want             string
		added            []string
	}{
		{"a Finder start on Apple silicon", "/usr/bin:/bin:/usr/sbin:/sbin", "darwin", brew,
			"/usr/bin:/bin:/usr/sbin:/sbin:/opt/homebrew/bin:/usr/local/bin", []string{"/opt/homebrew/bin", "/usr/local/bin"}},
		{"MacPorts", "/usr/bin:/bin", "darwin", func(d string) bool { return d == "/opt/local/bin" },
			"/usr/bin:/bin:/opt/local/bin", []string{"/opt/local/bin"}},
		{"a shell's PATH has them already, in its own order", "/usr/local/bin:/opt/homebrew/bin:/usr/bin", "darwin", brew,
			"/usr/local/bin:/opt/homebrew/bin:/usr/bin", nil},
		{"one of two missing", "/opt/homebrew/bin:/usr/bin", "darwin", brew,
			"/opt/homebrew/bin:/usr/bin:/usr/local/bin", []string{"/usr/local/bin"}},
		{"no package manager", "/usr/bin:/bin", "darwin", func(string) bool { return false }, "/usr/bin:/bin", nil},
		{"an empty PATH", "", "darwin", brew, "/opt/homebrew/bin:/usr/local/bin", []string{"/opt/homebrew/bin", "/usr/local/bin"}},
		{"an empty entry (the current folder) is kept", "/usr/bin::/bin", "darwin", brew,
			"/usr/bin::/bin:/opt/homebrew/bin:/usr/local/bin", []string{"/opt/homebrew/bin", "/usr/local/bin"}},
		{"Linux", "/usr/bin:/bin", "linux", func(string) bool { return true }, "/usr/bin:/bin", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, added := fullPath(tt.path, tt.goos, tt.isDir)
			if got != tt.want || !slices.Equal(added, tt.added) {
				t.Errorf("got %q, added %q; want %q, added %q", got, added, tt.want, tt.added)
			}
		})
	}
}
