//go:build !unix

package config

import (
	"io/fs"
	"os"
)

// strictModes says whether owners and permission bits mean something here: not on Windows, where
// the config folder is only as private as the user's profile.
const strictModes = false

func owner(fs.FileInfo) int { return -1 }

func open(path string) (*os.File, error) { return os.Open(path) }
