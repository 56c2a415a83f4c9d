package cli

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// procParent reads a process's name (and its parent) from the kern.proc.pid sysctl's kinfo_proc:
// p_comm, cut at its NUL (MAXCOMLEN, 16 bytes, as Linux's comm is), and e_ppid.
func procParent(pid int) (comm string, ppid int, ok bool) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || kp.Proc.P_pid != int32(pid) || kp.Eproc.Ppid < 1 {
		return "", 0, false
	}
	name, _, _ := bytes.Cut(kp.Proc.P_comm[:], []byte{0})
	return string(name), int(kp.Eproc.Ppid), len(name) > 0
}
