//go:build !linux

package main

import (
	"errors"
	"os"
	"syscall"
)

func onTerminal(int, int) (*os.File, func(), error) {
	return nil, nil, errors.New("--ui needs a pseudo-terminal, which krad-bench opens on Linux only")
}

func terminalAttr() *syscall.SysProcAttr { return nil }
