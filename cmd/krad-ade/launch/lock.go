package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LockName is the lock file in the config folder that a running krad-ade holds.
const LockName = "krad-ade.lock"

// One krad-ade per config folder and per tmux server. A second app on the same folder would take
// over api.json (and leave the first undiscoverable when it stops); a second app on the same tmux
// server, from another config folder, would drive the same sessions, set their variables to its
// own bus and hand out the same terminal numbers. So the app holds two locks for its whole life,
// taken before it reads config.toml or starts anything:
//
//   - LockName in the config folder;
//   - <socket>-app.lock beside its tmux server's socket, in tmux's own folder (tmux-UID, which
//     tmux keeps the user's and closed to others), so that every app that would reach that
//     server, whatever its config folder, finds the same file. (Not <socket>.lock: tmux takes
//     that one itself while it starts a server, and removes it.)
//
// They are POSIX record locks (fcntl), which the kernel drops when the process ends, however it
// ends, and which tell a second process the pid that holds them. A record lock is also dropped
// when the process closes any descriptor of the file: nothing else in the app opens these files.

// heldError says that another process holds a lock.
type heldError struct {
	path string
	pid  int // 0 when the kernel did not say (a process in another pid namespace)
}

func (e *heldError) Error() string { return fmt.Sprintf("%s is locked by pid %d", e.path, e.pid) }

// holder names the holder of a lock for people.
func (e *heldError) holder() string {
	if e.pid <= 0 {
		return "another krad-ade"
	}
	return fmt.Sprintf("another krad-ade (pid %d)", e.pid)
}

// stop is the command that stops the holder.
func (e *heldError) stop() string {
	if e.pid <= 0 {
		return "stop it"
	}
	return fmt.Sprintf("stop it first (kill %d)", e.pid)
}

// instanceLocks are the locks of one run; release drops them.
type instanceLocks struct{ files []*os.File }

func (l *instanceLocks) release() {
	for _, f := range l.files {
		f.Close()
	}
}

// lockInstance takes the config folder's lock and the tmux server's, or says who holds them and
// what to do, as an error and a hint. tmuxEnv is the environment of the app's tmux processes,
// whose TMUX_TMPDIR says where tmux keeps its socket.
func lockInstance(dir string, tmuxEnv []string) (_ *instanceLocks, msg, hint string) {
	l := &instanceLocks{}
	f, err := lockFile(filepath.Join(dir, LockName))
	var held *heldError
	switch {
	case errors.As(err, &held):
		return nil, fmt.Sprintf("%s runs on the config folder %s", held.holder(), dir),
			held.stop() + ": two apps on one config folder would take over each other's api.json and terminals"
	case err != nil:
		return nil, fmt.Sprintf("lock the config folder: %v", err), "check that the config folder is yours and the disk has room"
	}
	l.files = append(l.files, f)

	socketDir, err := tmuxSocketDir(tmuxEnv)
	if err != nil {
		l.release()
		return nil, err.Error(), "tmux would refuse it too: make the folder yours and owner-only (chmod 700), or set TMUX_TMPDIR to a folder of your own"
	}
	socket := filepath.Join(socketDir, tmuxSocketName)
	f, err = lockFile(socket + "-app.lock")
	switch {
	case errors.As(err, &held):
		l.release()
		return nil, fmt.Sprintf("%s drives the tmux server %s (%s), from another config folder", held.holder(), tmuxSocketName, socket),
			held.stop() + ": two apps on one tmux server would drive the same sessions; to run a second app, give it its own config folder and tmux server (TMUX_TMPDIR)"
	case err != nil:
		l.release()
		return nil, fmt.Sprintf("lock the tmux server: %v", err), "check that " + socketDir + " is yours"
	}
	l.files = append(l.files, f)
	return l, "", ""
}

// tmuxSocketName is the socket name of the app's tmux server (tmux -L).
const tmuxSocketName = "krad-ade"

// tmuxSocketDir is the folder of the app's tmux socket, found as tmux 3 finds it: $TMUX_TMPDIR
// when it names a folder, else /tmp, resolved, then tmux-UID. It creates the folder, owner-only,
// when it is missing, as tmux does, and refuses one that tmux would refuse: not a folder, not the
// user's, or open to others.
func tmuxSocketDir(env []string) (string, error) {
	base := "/tmp"
	for _, kv := range env {
		if d, ok := strings.CutPrefix(kv, "TMUX_TMPDIR="); ok && d != "" {
			if real, err := filepath.EvalSymlinks(d); err == nil {
				base = real
			}
		}
	}
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	}
	dir := filepath.Join(base, fmt.Sprintf("tmux-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create tmux's socket folder: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("tmux's socket folder: %w", err)
	}
	if err := checkSocketDir(dir, fi); err != nil {
		return "", err
	}
	return dir, nil
}
