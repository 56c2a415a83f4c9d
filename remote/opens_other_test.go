//go:build !linux

package remote_test

import "testing"

// opens counts the opens of a folder's files with Linux's inotify; elsewhere the test skips.
type opens struct{}

func watchOpens(t *testing.T, dir string) *opens {
	t.Skip("counts opens with Linux's inotify")
	return nil
}

func (o *opens) count() int { return 0 }
