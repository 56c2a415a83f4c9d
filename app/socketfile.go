package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SocketFile is the path of the socket of the tmux server that tc reaches, found as tmux 3 finds
// it: SocketPath when it is set; else the socket named SocketName (or the app's [SocketName]) in
// tmux's folder for the user: $TMUX_TMPDIR, as Env (the tmux processes' environment) sets it,
// when it names a folder, else /tmp, resolved, then tmux-UID. It creates that folder, owner-only,
// when it is missing, as tmux does, and refuses one that tmux would refuse: not a folder, not the
// user's, or open to others. What guards the server (krad-ade's lock) goes beside this path.
func (tc TmuxConfig) SocketFile() (string, error) {
	name, path := tc.socket()
	if path != "" {
		return path, nil
	}
	base := "/tmp"
	for _, kv := range tc.Env {
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
	return filepath.Join(dir, name), nil
}
