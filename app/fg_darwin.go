package app

import "golang.org/x/sys/unix"

// foregroundGroup is the foreground process group of the terminal that process pid belongs to,
// or 0 when it cannot be read: e_tpgid of the kinfo_proc that the kern.proc.pid sysctl gives
// (XNU bsd/kern/kern_sysctl.c, fill_user64_eproc: the session's terminal group, s_ttypgrpid,
// when the process has a controlling terminal, else 0).
func foregroundGroup(pid int) int {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || kp.Proc.P_pid != int32(pid) || kp.Eproc.Tpgid <= 0 {
		return 0
	}
	return int(kp.Eproc.Tpgid)
}

// runsCommand says whether process pid is krad-ade-agents (run) and process group fg's leader
// its child: its command, in a group of its own.
func runsCommand(pid, fg int) bool {
	parent, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || parent.Proc.P_pid != int32(pid) || unix.ByteSliceToString(parent.Proc.P_comm[:]) != companionName {
		return false
	}
	leader, err := unix.SysctlKinfoProc("kern.proc.pid", fg)
	return err == nil && leader.Proc.P_pid == int32(fg) && int(leader.Eproc.Ppid) == pid
}
