//go:build !linux && !darwin

package app

// foregroundGroup is 0 on this system: the app does not read a process's terminal here.
func foregroundGroup(int) int { return 0 }

// runsCommand is false on this system.
func runsCommand(int, int) bool { return false }
