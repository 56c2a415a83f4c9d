package appmain

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// packageDirs are the folders where a system's package managers put the programs the app runs
// (tmux first, then git, ssh, an agent's CLI, the editor), in the order a login shell puts them:
// on macOS, Homebrew's on Apple silicon, /usr/local/bin (Homebrew's on Intel, and the folder of
// macOS's own /etc/paths), and MacPorts'. A Linux PATH has its distribution's folders already.
var packageDirs = map[string][]string{
	"darwin": {"/opt/homebrew/bin", "/usr/local/bin", "/opt/local/bin"},
}

// fullPath is path with the package managers' folders of system goos appended, those that are
// folders here (isDir) and that path lacks, and the folders it added. An app started from
// Finder or launchd gets a thin PATH (/usr/bin:/bin:/usr/sbin:/sbin), where no tmux is, nor the
// commands the person's terminals expect; a login shell would have them. Appended, they never
// take a command's place from a folder the person put on PATH.
func fullPath(path, goos string, isDir func(string) bool) (string, []string) {
	have := filepath.SplitList(path)
	var added []string
	for _, d := range packageDirs[goos] {
		if !slices.Contains(have, d) && isDir(d) {
			added = append(added, d)
		}
	}
	if len(added) == 0 {
		return path, nil
	}
	out := strings.Join(added, string(os.PathListSeparator))
	if path != "" {
		out = path + string(os.PathListSeparator) + out
	}
	return out, added
}

// isDir reports whether path is a folder.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// withVar is getenv with name's value replaced by value.
func withVar(getenv func(string) string, name, value string) func(string) string {
	return func(k string) string {
		if k == name {
			return value
		}
		return getenv(k)
	}
}
