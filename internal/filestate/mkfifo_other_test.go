//go:build !unix

package filestate

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this system") }
