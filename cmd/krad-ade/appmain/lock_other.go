//go:build !unix

package appmain

import "os"

// lockFile opens path; elsewhere than on Unix it takes no lock, and two apps on one config folder
// are not prevented.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
