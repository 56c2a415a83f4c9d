//go:build !linux && !darwin

package cli

// procParent reads nothing here: no process's name is read on this system.
func procParent(int) (comm string, ppid int, ok bool) { return "", 0, false }
