//go:build !linux

package main

import "syscall"

// childAttr is nil where there is no parent-death signal: the baseline still stops when its
// stdin closes.
func childAttr() *syscall.SysProcAttr { return nil }
