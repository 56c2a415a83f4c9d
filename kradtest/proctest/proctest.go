// Package proctest answers the tests' questions about processes of this machine, from /proc.
package proctest

import (
	"bytes"
	"os"
	"strconv"
)

// Running says whether process pid is there and has not ended: a zombie has (what it wrote, it
// wrote), and so reads as not running. So does a Go program for the moment it execs from a
// thread other than its first, while the kernel swaps the thread group's leader.
func Running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}
