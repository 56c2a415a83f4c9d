// Package leaktest finds a secret where the tests say it must not be: in what every user of this
// computer can learn about its processes (their command lines, which any user reads in
// /proc/PID/cmdline or with ps), in their environments, and in files. Tests use it to show that a
// worker's prompt reaches the worker and nothing else.
package leaktest

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nobody is the uid and gid of the second user ps runs as when the test runs as root.
const nobody = 65534

// Processes lists the processes of this computer whose command line holds secret, one line each
// ("pid 123 cmdline: …"), and those whose environment does, where the test may read it (every
// one, as root). It reads every /proc/PID itself, then runs `ps -e` as another user (nobody, when
// the test is root) and searches its output: what ps shows a second user of the computer.
func Processes(t testing.TB, secret string) []string {
	t.Helper()
	var found []string
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		for _, file := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(filepath.Join(d, file))
			if err != nil {
				continue // gone meanwhile, or not ours to read
			}
			if bytes.Contains(b, []byte(secret)) {
				found = append(found, "pid "+filepath.Base(d)+" "+file+": "+strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
	}
	uid := os.Geteuid()
	cmd := exec.Command("ps", "-e", "-ww", "-o", "pid=,args=")
	if uid == 0 {
		uid = nobody
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ps as uid %d: %v", uid, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, secret) {
			found = append(found, "ps as uid "+strconv.Itoa(uid)+": "+strings.TrimSpace(line))
		}
	}
	return found
}

// Files lists the regular files under roots, changed since since, that hold secret. Files over
// 16 MiB are passed over, and so are folders the test cannot read. Give it the folders the test
// made for what it runs (their HOME, their TMPDIR, tmux's socket folder), not a shared one such
// as /tmp: on a machine others use, that is their files, and a walk that never ends.
func Files(t testing.TB, secret string, since time.Time, roots ...string) []string {
	t.Helper()
	var found []string
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			fi, err := d.Info()
			if err != nil || fi.ModTime().Before(since) || fi.Size() > 16<<20 {
				return nil
			}
			if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(secret)) {
				found = append(found, path)
			}
			return nil
		})
	}
	return found
}
