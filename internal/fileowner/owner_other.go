//go:build !unix

package fileowner

import "io/fs"

// Of is -1: files have no Unix owner here.
func Of(fs.FileInfo) int { return -1 }
