package cli

import (
	"fmt"
	"os"
)

// procParent reads a process's name (and its parent) from /proc/PID/stat: "PID (comm) S PPID …",
// the name in parentheses, which may itself hold spaces and parentheses.
func procParent(pid int) (comm string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	return parseProcStat(string(b))
}
