package appmain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/krad-ade/krad/app"
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
//   - <socket>-app.lock beside the socket of the tmux server the app drives
//     (app.TmuxConfig.SocketFile), by default in tmux's own folder (tmux-UID, which tmux keeps
//     the user's and closed to others), so that every app that would reach that server, whatever
//     its config folder, finds the same file. (Not <socket>.lock: tmux takes that one itself
//     while it starts a server, and removes it.)
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
// what to do, as an error and a hint. tmux is how the app reaches its tmux server: the lock goes
// beside that server's socket (app.TmuxConfig.SocketFile), whatever names it.
func lockInstance(dir string, tmux app.TmuxConfig) (_ *instanceLocks, msg, hint string) {
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

	socket, err := tmux.SocketFile()
	if err != nil {
		l.release()
		return nil, err.Error(), "tmux would refuse it too: make the folder yours and owner-only (chmod 700), or set TMUX_TMPDIR to a folder of your own"
	}
	f, err = lockFile(socket + "-app.lock")
	switch {
	case errors.As(err, &held):
		l.release()
		return nil, fmt.Sprintf("%s drives the tmux server %s (%s), from another config folder", held.holder(), filepath.Base(socket), socket),
			held.stop() + ": two apps on one tmux server would drive the same sessions; to run a second app, give it its own config folder and tmux server (TMUX_TMPDIR)"
	case err != nil:
		l.release()
		return nil, fmt.Sprintf("lock the tmux server: %v", err), "check that " + filepath.Dir(socket) + " is yours"
	}
	l.files = append(l.files, f)
	return l, "", ""
}
