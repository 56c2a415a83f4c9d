package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"weak"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/tokenfile"
)

// hostScript ($1 the session, $2 the socket's name) learns what the terminals need to know of the
// host: its home, its PATH, and whether tmux is there; it makes the worktrees root,
// ~/.krad-ade/worktrees, and the socket folder, ~/.krad-ade/tmux, and reports the socket's path,
// and "legacy" when an earlier version's tmux server (tmux -L krad-ade, in tmux's default folder)
// has the session and ours does not; the server's identity (see starts); and the askpass programs
// the user has of their own there, which stay: "own" for git's (GIT_ASKPASS, or git's
// core.askPass), "ssh" for ssh's (SSH_ASKPASS); and "groups" when the worktrees root holds
// anything (else the host has no groups, and after an attach no group to retire).
//
// It runs at every connect, so it starts few programs: tmux is asked about the earlier version's
// server only where a socket of that name is there to ask (a host that never ran one starts no
// tmux here), the boot and the host's name are read by sh's own read from /proc, and git is
// asked for core.askPass only when its global config (GIT_CONFIG_GLOBAL, ~/.gitconfig, or
// git/config under XDG_CONFIG_HOME) may hold one: a file is read by sh, and only one that
// mentions askpass or an include (in any case, as git's keys are) starts git.
var hostScript = shell.Script{Name: "HOST", Body: `
umask 077;
krad_home;
t=$(command -v tmux || true);
h=$HOME; p=$PATH;
krad_enters "~" .krad-ade worktrees;
g=;
for f in * .[!.]* ..?*; do if [ -e "$f" ] || [ -L "$f" ]; then g=groups; break; fi; done;
cd .. || krad_fail "enter ~/.krad-ade";
krad_enter tmux "~/.krad-ade/tmux";
s="$PWD/$2";
if [ ${#s} -gt 107 ]; then krad_fail "use the tmux socket $s: its path is longer than the 107 bytes a Unix socket's may have; the home folder's path must be shorter"; fi;
old=;
for f in "${TMUX_TMPDIR:-/tmp}"/tmux-*/krad-ade; do if [ -S "$f" ]; then old=maybe; break; fi; done;
if [ -n "$old" ] && [ -n "$t" ] && ! tmux -S "$s" has-session -t "=$1" >/dev/null 2>&1 && tmux -L krad-ade has-session -t "=$1" >/dev/null 2>&1; then old=legacy; else old=; fi;
b=; { read -r b </proc/sys/kernel/random/boot_id; } 2>/dev/null || b=;
n=; { read -r n </proc/sys/kernel/hostname; } 2>/dev/null || n=$(uname -n);
i=$(ls -di . 2>/dev/null || true);
krad_gitconf() {
  if [ -n "${GIT_CONFIG_GLOBAL+set}" ]; then return 0; fi;
  for f in "$h/.gitconfig" "${XDG_CONFIG_HOME:-$h/.config}/git/config"; do
    if [ -f "$f" ] && [ -r "$f" ]; then while IFS= read -r l || [ -n "$l" ]; do case $l in *[Aa][Ss][Kk][Pp][Aa][Ss][Ss]*|*[Ii][Nn][Cc][Ll][Uu][Dd][Ee]*) return 0;; esac; done <"$f"; fi;
  done;
  return 1;
};
a=;
if [ -n "${GIT_ASKPASS:-}" ] || { krad_gitconf && command -v git >/dev/null 2>&1 && [ -n "$(git config --global --includes --get core.askPass 2>/dev/null)" ]; }; then a=own; fi;
if [ -n "${SSH_ASKPASS:-}" ]; then a="$a ssh"; fi;
krad_say ok "$h" "$p" "$t" "$s" "$old" "$b $n $i $s" "$a" "$g";
`}

// hostLook is what hostScript says of the host, one line each, in the order of its krad_say.
type hostLook struct {
	home   string // $HOME
	path   string // $PATH
	tmux   string // tmux's path: "" when it is not installed
	socket string // the tmux socket's path, in ~/.krad-ade/tmux
	// legacy: an earlier version's tmux server (tmux -L krad-ade) has the session and ours does
	// not.
	legacy bool
	server string // the tmux server's identity: boot, host name, inode and path of its folder
	// ownAskpass and ownSSHAskpass: the user has an askpass program of their own there, for git
	// (GIT_ASKPASS, or git's core.askPass) and for ssh (SSH_ASKPASS), which stays.
	ownAskpass, ownSSHAskpass bool
	groups                    bool // the worktrees root holds anything
}

// hostLookLines is how many lines hostScript says.
const hostLookLines = 8

// readHostLook reads hostScript's lines.
func readHostLook(lines []string) (hostLook, error) {
	if len(lines) != hostLookLines {
		return hostLook{}, fmt.Errorf("look at the host: %d lines, want %d", len(lines), hostLookLines)
	}
	own := strings.Fields(lines[6])
	return hostLook{
		home:          lines[0],
		path:          lines[1],
		tmux:          lines[2],
		socket:        lines[3],
		legacy:        lines[4] == "legacy",
		server:        lines[5],
		ownAskpass:    slices.Contains(own, "own"),
		ownSSHAskpass: slices.Contains(own, "ssh"),
		groups:        lines[7] == "groups",
	}, nil
}

// stepError is err, or the *forward.TimeoutError it holds, bare: the status then says first what
// the host did not finish.
func stepError(err error) error {
	var te *forward.TimeoutError
	if errors.As(err, &te) {
		return te
	}
	return err
}

// prepare gets a freshly connected host ready, before the connection counts as up: krad
// installed, the token file written, tmux found and its socket folder made. The looks run first
// in the connect's own sh on the host, in a subshell of it (lent by forward: no SSH session, no
// login shell, not even an sh of their own), with a look at the token file in place of its
// write; on a reconnect, where the file still holds the token and krad's files are those
// verified before, that is all the host is asked.
// Only what the look did not find costs an exec: the token file's write (the token on its stdin,
// which the lent sh cannot carry), the copy of krad. A look that fails there is done again as one
// exec, the token's write with it (a shell.Batch: one SSH exec, one login shell), whose errors
// say in full why, with what the host printed on stderr. Each command has a deadline (the
// Forward's CommandTimeout).
func (e *Environment) prepare(ctx context.Context, client *ssh.Client, fwd forward.Forward, sh *forward.Shell) error {
	h := remote.SSH(client)
	e.mu.Lock()
	last := e.verified
	e.mu.Unlock()
	looks := func(token shell.Step) shell.Batch {
		return shell.Batch{
			remote.ProbeStep(),
			remote.LookStep(e.cfg.Version, last),
			token,
			{Script: hostScript, Args: []string{e.cfg.Name, app.SocketName}, Folders: []string{".krad-ade", ".krad-ade/worktrees", ".krad-ade/tmux"}},
		}
	}
	check, err := tokenfile.CheckStep(e.cfg.Instance)
	if err != nil {
		return forward.Permanent(err)
	}
	batch := looks(check)
	out, runErr := timed{lentShell{sh}, e, "preparing the host"}.Run(ctx, batch.Subshell(), nil)
	if te := (*forward.TimeoutError)(nil); errors.As(runErr, &te) {
		return te
	}
	var (
		tokenPath string
		holds     bool
	)
	l, err := readLooks(e.cfg.Version, batch, out, runErr)
	if err == nil {
		rep, repErr := batch.Result(2, out, runErr)
		tokenPath, holds, err = tokenfile.ReadCheck(e.cfg.Instance, e.cfg.Token, rep, repErr)
	}
	switch {
	case err != nil:
		e.log.Debug("the look in the connect's shell failed: again as an exec", "environment", e.cfg.Name, "error", err)
		token, err := tokenfile.WriteStep(e.cfg.Instance, e.cfg.Token)
		if err != nil {
			return forward.Permanent(err)
		}
		batch = looks(token)
		out, runErr = timed{h, e, "preparing the host"}.Run(ctx, batch.Command(), batch.Stdin())
		if te := (*forward.TimeoutError)(nil); errors.As(runErr, &te) {
			return te
		}
		if l, err = readLooks(e.cfg.Version, batch, out, runErr); err != nil {
			return err
		}
		rep, repErr := batch.Result(2, out, runErr)
		if tokenPath, err = tokenfile.ReadWrite(e.cfg.Instance, rep, repErr); err != nil {
			return err
		}
	case !holds:
		e.log.Debug("the token file is to be written", "environment", e.cfg.Name)
		if tokenPath, err = tokenfile.Write(ctx, timed{h, e, "writing the token file"}, e.cfg.Instance, e.cfg.Token); err != nil {
			return stepError(err)
		}
	}
	plat, found, host := l.plat, l.found, l.host
	bin, err := readStatic(filepath.Join(e.cfg.BinDir, plat.StaticName()), plat, e.cfg.Version)
	if err != nil {
		return forward.Permanent(fmt.Errorf("the static krad for %s: %w", plat, err))
	}
	binDir, verified, err := remote.InstallFound(ctx, timed{h, e, "installing krad"}, *bin, found, last)
	if err != nil {
		return stepError(err)
	}
	e.mu.Lock()
	e.verified = verified
	e.mu.Unlock()
	// The user's own askpass on the host (GIT_ASKPASS, or git's core.askPass; SSH_ASKPASS) is
	// left alone.
	askpass, sshAskpass := !host.ownAskpass, !host.ownSSHAskpass
	if host.tmux == "" {
		return fmt.Errorf("tmux is not installed on the host, and its terminals are tmux windows: install it there (Debian: apt-get install tmux)")
	}
	if !safePath(host.socket) {
		return fmt.Errorf("look at the host: the tmux socket %s is not an absolute path the app can pass on: the home folder's path there "+
			"holds a backslash or a control character; give the user a home folder without them", termsafe.QuoteMax(host.socket, 200))
	}
	dir := e.cfg.Dir
	if dir == "~" {
		dir = host.home
	} else if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		dir = host.home + "/" + rest
	}
	e.mu.Lock()
	e.vars = app.HostVars{
		TerminalVars: api.TerminalVars{Endpoint: fwd.Addr, TokenFile: tokenPath, BinDir: binDir, Path: host.path, Askpass: askpass, SSHAskpass: askpass && sshAskpass && e.cfg.SSHAskpass},
		Dir:          dir,
	}
	e.groups = host.groups
	e.home = host.home
	e.socket = host.socket
	e.server = host.server
	if host.legacy && !e.legacy {
		e.log.Info("the host's tmux server of an earlier version (tmux -L krad-ade) has this environment's session: "+
			"the app attaches to it while it runs, and starts no server there", "environment", e.cfg.Name)
	}
	e.legacy = host.legacy
	e.mu.Unlock()
	e.log.Info("host ready", "environment", e.cfg.Name, "platform", plat.String(), "forward", fwd.Addr, "krad", binDir, "tmux", host.socket)
	e.keepShell(client, sh)
	return nil
}

// looked is what the looks of a connect read (steps 0, 1 and 3 of prepare's batch): the host's
// platform, what is installed of krad, and what hostScript says.
type looked struct {
	plat  remote.Platform
	found remote.Found
	host  hostLook
}

// readLooks reads the looks of prepare's batch. Each step's failure is named by its package
// ("probe the host's platform: …", "install krad: …"), in the order of the steps: the status
// shows it as it is.
func readLooks(version string, batch shell.Batch, out []byte, runErr error) (l looked, err error) {
	if l.plat, err = remote.ReadProbe(batch.Result(0, out, runErr)); err != nil {
		return looked{}, err
	}
	look, err := batch.Result(1, out, runErr)
	if l.found, err = remote.ReadLook(version, look, err); err != nil {
		return looked{}, err
	}
	lines, err := batch.Result(3, out, runErr)
	if err != nil {
		return looked{}, fmt.Errorf("look at the host: %w", err)
	}
	if l.host, err = readHostLook(lines); err != nil {
		return looked{}, err
	}
	return l, nil
}

// lentShell runs commands in the connect's sh that forward lends prepare, as a remote.Host
// whose commands read nothing.
type lentShell struct{ sh *forward.Shell }

func (l lentShell) Run(ctx context.Context, command string, stdin io.Reader) ([]byte, error) {
	if stdin != nil {
		return nil, errors.New("run in the connect's shell: a command there reads nothing")
	}
	return l.sh.Run(ctx, command)
}

// statics shares the static krad that one prepare read with the others under way at the same
// time (the app's start, a laptop's wake): a file of several MiB, read and hashed once rather than
// once per host, held in memory by those prepares only (a weak pointer: the collector frees it
// once the last one is done). A file rebuilt meanwhile (another size or mtime) is read again.
var statics struct {
	mu sync.Mutex
	m  map[staticKey]weak.Pointer[remote.Binary]
}

type staticKey struct {
	path    string
	size    int64
	mtime   time.Time
	plat    remote.Platform
	version string
}

// readStatic is remote.ReadBinary, shared through statics.
func readStatic(path string, plat remote.Platform, version string) (*remote.Binary, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read the static krad: %w", err)
	}
	k := staticKey{path: path, size: fi.Size(), mtime: fi.ModTime(), plat: plat, version: version}
	statics.mu.Lock()
	defer statics.mu.Unlock()
	if b := statics.m[k].Value(); b != nil {
		return b, nil
	}
	b, err := remote.ReadBinary(path, plat, version)
	if err != nil {
		return nil, err
	}
	if statics.m == nil {
		statics.m = map[staticKey]weak.Pointer[remote.Binary]{}
	}
	statics.m[k] = weak.Make(&b)
	return &b, nil
}
