package sshdtest

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// Children lists the processes whose parent is pid, from macOS's process table (the
// kern.proc.all sysctl's kinfo_proc records, e_ppid).
func Children(pid int) []int {
	procs, _ := unix.SysctlKinfoProcSlice("kern.proc.all")
	var out []int
	for _, p := range procs {
		if int(p.Eproc.Ppid) == pid {
			out = append(out, int(p.Proc.P_pid))
		}
	}
	return out
}

// InSession lists the processes of session sid that have not ended (zombies left out), each as
// "PID (COMM)", from macOS's process table.
func InSession(sid int) []string {
	procs, _ := unix.SysctlKinfoProcSlice("kern.proc.all")
	var out []string
	for _, p := range procs {
		pid := int(p.Proc.P_pid)
		if s, err := unix.Getsid(pid); err != nil || s != sid || p.Proc.P_stat == 5 { // SZOMB
			continue
		}
		out = append(out, strconv.Itoa(pid)+" ("+unix.ByteSliceToString(p.Proc.P_comm[:])+")")
	}
	return out
}
