//go:build !unix

package config

import (
	"os"
)

// strictModes says whether owners and permission bits mean something here: not on Windows, where
// the config folder is only as private as the user's profile.
const strictModes = false

func open(path string) (*os.File, error) { return os.Open(path) }
