package appmain

import (
	"context"
	"os"
	"time"

	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/tokenfile"
)

// The local terminals' token file. Terminals on this computer get KRAD_ADE_TOKEN, as the spec
// says, and KRAD_ADE_TOKEN_FILE beside it, which krad reads first: a terminal's environment
// cannot change, so a terminal that outlives a run of the app would hold a dead token, while the
// file is rewritten at every start. It is the very file SSH hosts get, put by the same
// package tokenfile script, here run by sh on this computer: ~/.krad-ade/run/<instance>/token,
// mode 0600 in owner-only folders that refuse symlinks and other users' folders, written through
// a temporary file renamed into place, its path the same for every run of this app instance (the
// instance names the computer, the user and the config folder). It lives there rather than in
// the config folder, which people keep in dotfiles repositories and sync; a token is runtime state.

// shell runs package tokenfile's scripts on this computer, with /bin/sh, in the app's environment
// (whose HOME holds ~/.krad-ade): they are command lines for a shell, as an SSH host's login shell
// gets them.
func (a *run) shell() remote.Host { return remote.Local(tmuxEnv(os.Environ())) }

// removeTokenFile removes the local terminals' token file, as the bridges remove the hosts'.
func (a *run) removeTokenFile(path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tokenfile.Remove(ctx, a.shell(), path); err != nil {
		a.log.Warn("the local terminals' token file was left in place", "path", path, "err", err)
	}
}
