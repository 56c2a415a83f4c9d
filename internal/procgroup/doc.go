// Package procgroup helps end a command's process group whole: the command runs as the leader
// of a group of its own (exec.Cmd with Setpgid), so that one signal to the group reaches what
// the command started too. The group's id is the command's pid, which names that group only
// until the command is reaped: [WaitExited] waits for the command to exit without reaping it,
// so that a signal sent to the group afterwards, before the reaping, cannot reach a stranger.
//
// It is Linux's and macOS's (waitid with WNOWAIT), as are its callers: ssh_config's Match exec
// and ProxyCommand; and the extensions' supervisor, which asks [Exited] whether a process is gone
// before its connection says so.
package procgroup
