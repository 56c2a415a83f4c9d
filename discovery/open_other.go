//go:build !unix

package discovery

import (
	"os"
)

// open opens path for reading. Read checked with Lstat that it is no symlink, and checks after
// opening that it opened that same file.
func open(path string) (*os.File, error) {
	return os.Open(path)
}
