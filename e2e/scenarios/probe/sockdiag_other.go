//go:build e2e && !linux

package main

import "fmt"

// sockdiag says "refused": sock_diag is a netlink family of Linux's, which no other system has.
func sockdiag() error {
	fmt.Println("refused: sock_diag is Linux's")
	return nil
}
