//go:build !unix

package app

import "io/fs"

func checkSocketDir(string, fs.FileInfo) error { return nil }
