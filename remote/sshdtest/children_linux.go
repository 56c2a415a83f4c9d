package sshdtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// proc is one process of Linux's /proc, as its stat file has it.
type proc struct {
	pid, ppid, sid int
	comm, state    string
}

// procs lists this computer's processes, from Linux's /proc.
func procs() []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session …, where comm may hold spaces and parentheses.
		st := string(b)
		open, shut := strings.IndexByte(st, '('), strings.LastIndexByte(st, ')')
		if open < 0 || shut < open {
			continue
		}
		f := strings.Fields(st[shut+1:])
		if len(f) < 4 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		sid, _ := strconv.Atoi(f[3])
		out = append(out, proc{pid: pid, ppid: ppid, sid: sid, comm: st[open+1 : shut], state: f[0]})
	}
	return out
}

// Children lists the processes whose parent is pid, from Linux's /proc.
func Children(pid int) []int {
	var out []int
	for _, p := range procs() {
		if p.ppid == pid {
			out = append(out, p.pid)
		}
	}
	return out
}

// InSession lists the processes of session sid that have not ended (zombies left out), each as
// "PID (COMM)", from Linux's /proc: what a session whose leader is gone left running.
func InSession(sid int) []string {
	var out []string
	for _, p := range procs() {
		if p.sid == sid && p.state != "Z" && p.state != "X" {
			out = append(out, strconv.Itoa(p.pid)+" ("+p.comm+")")
		}
	}
	return out
}
