package app

import (
	"os"
	"strconv"
	"strings"
)

// foregroundGroup is the foreground process group of the terminal that process pid belongs to
// (tpgid in /proc/PID/stat), or 0 when it cannot be read.
func foregroundGroup(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	return parseTPGID(b)
}

// runsCommand says whether process pid is krad-ade-agents (run) and process group fg's leader
// its child: its command, in a group of its own.
func runsCommand(pid, fg int) bool {
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil || strings.TrimSpace(string(comm)) != companionName {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(fg) + "/stat")
	return err == nil && parsePPID(stat) == pid
}
