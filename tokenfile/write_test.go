//go:build unix

package tokenfile_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/remote/sshdtest"
	"github.com/krad-ade/krad/tokenfile"
)

// host starts an sshd whose sessions' HOME is a temporary folder, and connects to it.
func host(t *testing.T) (*sshdtest.Server, tokenfile.Host) {
	t.Helper()
	srv := sshdtest.Start(t, sshdtest.Options{})
	return srv, remote.SSH(srv.Dial(t))
}

func newToken(t *testing.T) api.Token {
	t.Helper()
	tok, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func ino(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, de := range des {
		n = append(n, de.Name())
	}
	return n
}

func TestWrite(t *testing.T) {
	srv, h := host(t)
	ctx := context.Background()
	tok := newToken(t)

	path, err := tokenfile.Write(ctx, h, "main", tok)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	if want := filepath.Join(srv.Home, ".krad-ade", "run", "main", "token"); path != want {
		t.Errorf("got path %q, want %q", path, want)
	}
	if m := mode(t, path); m != 0o600 {
		t.Errorf("the file has mode %v, want -rw-------", m)
	}
	for _, d := range []string{".krad-ade", ".krad-ade/run", ".krad-ade/run/main"} {
		if m := mode(t, filepath.Join(srv.Home, d)); m != os.ModeDir|0o700 {
			t.Errorf("~/%s has mode %v, want drwx------", d, m)
		}
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != tok.Reveal()+"\n" {
		t.Errorf("the file holds %q (%v), want the token and a newline", b, err)
	}
	got, err := tokenfile.Read(path)
	if err != nil || !got.Equal(tok) {
		t.Errorf("Read: got a different token, or %v", err)
	}

	// Another write replaces the file at the same path with a new one.
	before := ino(t, path)
	tok2 := newToken(t)
	path2, err := tokenfile.Write(ctx, h, "main", tok2)
	if err != nil || path2 != path {
		t.Fatalf("second write: got %q, %v; want %q", path2, err, path)
	}
	if got, err := tokenfile.Read(path); err != nil || !got.Equal(tok2) {
		t.Errorf("after the second write Read gives another token, or %v", err)
	}
	if ino(t, path) == before {
		t.Errorf("the second write wrote in place, want a new file renamed over the old one")
	}
	if n := names(t, filepath.Dir(path)); !slices.Equal(n, []string{"token"}) {
		t.Errorf("the folder holds %q, want only the token file", n)
	}

	// Another instance has a path of its own.
	other, err := tokenfile.Write(ctx, h, "second-1", tok)
	if err != nil || other != filepath.Join(srv.Home, ".krad-ade", "run", "second-1", "token") {
		t.Errorf("another instance: got %q, %v", other, err)
	}
}

func TestWriteNoisyShell(t *testing.T) {
	srv, h := host(t)
	bashrc := "echo 'Welcome to the build box'\necho 'conda: base' >&2\nprintf 'no newline'\n"
	if err := os.WriteFile(filepath.Join(srv.Home, ".bashrc"), []byte(bashrc), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := newToken(t)
	path, err := tokenfile.Write(context.Background(), h, "main", tok)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tokenfile.Read(path); err != nil || !got.Equal(tok) {
		t.Errorf("Read: got another token, or %v", err)
	}
}

func TestWriteFixesLooseFolders(t *testing.T) {
	srv, h := host(t)
	dir := filepath.Join(srv.Home, ".krad-ade", "run", "main")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(srv.Home, ".krad-ade"), 0o755)
	os.Chmod(filepath.Join(srv.Home, ".krad-ade", "run"), 0o777)
	os.Chmod(dir, 0o750)
	if _, err := tokenfile.Write(context.Background(), h, "main", newToken(t)); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".krad-ade", ".krad-ade/run", ".krad-ade/run/main"} {
		if m := mode(t, filepath.Join(srv.Home, d)); m != os.ModeDir|0o700 {
			t.Errorf("~/%s has mode %v, want drwx------", d, m)
		}
	}
}

func TestWriteRefuses(t *testing.T) {
	ctx := context.Background()
	refused := func(t *testing.T, err error, path, reason, msg string) {
		t.Helper()
		var re *shell.RefusedError
		if !errors.As(err, &re) || re.Path != path || re.Reason != reason {
			t.Fatalf("got %v, want %s refused (%s)", err, path, reason)
		}
		if want := "write the token file: " + msg; err.Error() != want {
			t.Errorf("got %q, want %q", err, want)
		}
	}

	t.Run("symlinked run folder", func(t *testing.T) {
		srv, h := host(t)
		target := t.TempDir()
		targetMode := mode(t, target)
		os.Mkdir(filepath.Join(srv.Home, ".krad-ade"), 0o700)
		if err := os.Symlink(target, filepath.Join(srv.Home, ".krad-ade", "run")); err != nil {
			t.Fatal(err)
		}
		_, err := tokenfile.Write(ctx, h, "main", newToken(t))
		refused(t, err, "~/.krad-ade/run", "symlink", "~/.krad-ade/run is a symbolic link: refused; remove it")
		if n := names(t, target); len(n) != 0 {
			t.Errorf("the link's target holds %q, want it untouched", n)
		}
		if m := mode(t, target); m != targetMode {
			t.Errorf("the link's target has mode %v, want it untouched (%v)", m, targetMode)
		}
	})

	t.Run("symlinked home folder", func(t *testing.T) {
		srv, h := host(t)
		target := t.TempDir()
		if err := os.Symlink(target, filepath.Join(srv.Home, ".krad-ade")); err != nil {
			t.Fatal(err)
		}
		_, err := tokenfile.Write(ctx, h, "main", newToken(t))
		refused(t, err, "~/.krad-ade", "symlink", "~/.krad-ade is a symbolic link: refused; remove it")
		if n := names(t, target); len(n) != 0 {
			t.Errorf("the link's target holds %q, want it untouched", n)
		}
	})

	t.Run("symlinked token file", func(t *testing.T) {
		srv, h := host(t)
		dir := filepath.Join(srv.Home, ".krad-ade", "run", "main")
		os.MkdirAll(dir, 0o700)
		target := filepath.Join(t.TempDir(), "elsewhere")
		os.WriteFile(target, []byte("theirs\n"), 0o644)
		if err := os.Symlink(target, filepath.Join(dir, "token")); err != nil {
			t.Fatal(err)
		}
		_, err := tokenfile.Write(ctx, h, "main", newToken(t))
		refused(t, err, "~/.krad-ade/run/main/token", "symlink", "~/.krad-ade/run/main/token is a symbolic link: refused; remove it")
		if b, _ := os.ReadFile(target); string(b) != "theirs\n" {
			t.Errorf("the link's target holds %q, want it untouched", b)
		}
	})

	t.Run("a file where a folder goes", func(t *testing.T) {
		srv, h := host(t)
		os.WriteFile(filepath.Join(srv.Home, ".krad-ade"), nil, 0o600)
		_, err := tokenfile.Write(ctx, h, "main", newToken(t))
		refused(t, err, "~/.krad-ade", "notdir", "~/.krad-ade is not a folder: refused; remove it")
	})

	t.Run("a folder where the token goes", func(t *testing.T) {
		srv, h := host(t)
		os.MkdirAll(filepath.Join(srv.Home, ".krad-ade", "run", "main", "token"), 0o700)
		_, err := tokenfile.Write(ctx, h, "main", newToken(t))
		refused(t, err, "~/.krad-ade/run/main/token", "notfile", "~/.krad-ade/run/main/token is not a regular file: refused; remove it")
	})

	t.Run("another user's folder", func(t *testing.T) {
		testbin.NeedRoot(t, "making a folder that another user owns")
		srv, h := host(t)
		run := filepath.Join(srv.Home, ".krad-ade", "run")
		os.MkdirAll(run, 0o700)
		if err := os.Chown(run, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		os.Chmod(run, 0o777)
		_, err := tokenfile.Write(ctx, h, "main", newToken(t))
		refused(t, err, "~/.krad-ade/run", "owner", "~/.krad-ade/run is owned by another user: refused; remove it (as its owner or root)")
		if n := names(t, run); len(n) != 0 {
			t.Errorf("the folder holds %q, want nothing written", n)
		}
		if m := mode(t, run); m != os.ModeDir|0o777 {
			t.Errorf("the folder has mode %v, want it untouched", m)
		}
	})
}

func TestWriteChecksItsInput(t *testing.T) {
	ctx := context.Background()
	for _, instance := range []string{"", "Main", "-x", "a/b", "..", "a b", "a'b", "a\nb", strings.Repeat("a", 64)} {
		if _, err := tokenfile.Write(ctx, nil, instance, newToken(t)); !errors.Is(err, tokenfile.ErrInstance) {
			t.Errorf("instance %q: got %v, want ErrInstance", instance, err)
		}
	}
	if _, err := tokenfile.Write(ctx, nil, "main", api.Token{}); err == nil {
		t.Errorf("the zero token: got no error")
	}
}

// cutHost passes only the first n bytes of stdin on, as a connection that drops mid-write would.
type cutHost struct {
	tokenfile.Host
	n int64
}

func (h cutHost) Run(ctx context.Context, command string, stdin io.Reader) ([]byte, error) {
	return h.Host.Run(ctx, command, io.LimitReader(stdin, h.n))
}

func TestWriteCutShort(t *testing.T) {
	_, h := host(t)
	ctx := context.Background()
	tok := newToken(t)
	path, err := tokenfile.Write(ctx, h, "main", tok)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tokenfile.Write(ctx, cutHost{h, 10}, "main", newToken(t))
	var ee *remote.ExitError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "write the token: 10 bytes of 33 arrived") {
		t.Fatalf("got %v, want an error that says the token did not arrive whole", err)
	}
	if got, err := tokenfile.Read(path); err != nil || !got.Equal(tok) {
		t.Errorf("after a cut write Read gives another token, or %v: want the old one, whole", err)
	}
	if n := names(t, filepath.Dir(path)); !slices.Equal(n, []string{"token"}) {
		t.Errorf("the folder holds %q, want only the token file", n)
	}
}

// recordingHost passes every Run on to the host it wraps, and keeps each command line and what
// went on its stdin. A command line is all that reaches a process's arguments or environment on
// the host: remote.SSH sends no variables, and sshd runs the user's shell as `sh -c COMMAND`.
type recordingHost struct {
	tokenfile.Host
	mu   sync.Mutex
	runs []recordedRun
}

type recordedRun struct {
	command string
	stdin   []byte
}

func (h *recordingHost) Run(ctx context.Context, command string, stdin io.Reader) ([]byte, error) {
	var in []byte
	if stdin != nil {
		var err error
		if in, err = io.ReadAll(stdin); err != nil {
			return nil, err
		}
		stdin = bytes.NewReader(in)
	}
	h.mu.Lock()
	h.runs = append(h.runs, recordedRun{command, in})
	h.mu.Unlock()
	return h.Host.Run(ctx, command, stdin)
}

// TestTokenOnlyOnStdin: every command Write and Remove send to a real host, and what goes on each
// one's stdin, as the host gets them. The token is in no command line, which is the only way into
// a process's arguments or environment there, and reaches the host on the stdin of the one command
// that writes it, whole, so that the file holds it. Unlike the sampling of /proc below, this does
// not depend on how busy the machine is.
func TestTokenOnlyOnStdin(t *testing.T) {
	srv, real := host(t)
	h := &recordingHost{Host: real}
	ctx := context.Background()
	var tokens []api.Token
	var path string
	for range 3 { // the first makes the folders, the others replace the file
		tok := newToken(t)
		tokens = append(tokens, tok)
		var err error
		if path, err = tokenfile.Write(ctx, h, "main", tok); err != nil {
			t.Fatal(err)
		}
		if got, err := tokenfile.Read(path); err != nil || !got.Equal(tok) {
			t.Fatalf("the file does not hold the token just written (%v)", err)
		}
	}
	if err := tokenfile.Remove(ctx, h, path); err != nil {
		t.Fatal(err)
	}
	if len(h.runs) != 4 {
		t.Fatalf("%d commands for three writes and a remove, want 4", len(h.runs))
	}
	for i, tok := range tokens {
		secret := tok.Reveal()
		for j, r := range h.runs {
			if strings.Contains(r.command, secret) {
				t.Errorf("token %d is on the command line of command %d", i+1, j+1)
			}
			if got, want := bytes.Contains(r.stdin, []byte(secret)), j == i; got != want {
				t.Errorf("token %d on the stdin of command %d: %v, want %v", i+1, j+1, got, want)
			}
		}
		if r := h.runs[i]; string(r.stdin) != secret+"\n" {
			t.Errorf("write %d sent %d bytes on stdin, want the token and a newline", i+1, len(r.stdin))
		}
		if strings.Contains(srv.Log(), secret) {
			t.Errorf("token %d is in sshd's log", i+1)
		}
	}
}

// TestTokenNeverOnTheCommandLine samples every process's command line and environment on the
// host while tokens are written, and looks for them: a supplement to TestTokenOnlyOnStdin, which
// sees what the host is sent, that looks at what runs there. A canary on a command line and another
// in an environment, each in a command as short-lived as a write, prove that the sampling would
// see a token sent that way; a machine too busy for the sampling to catch them skips the test,
// saying so, rather than fail it.
func TestTokenNeverOnTheCommandLine(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs /proc")
	}
	srv, h := host(t)
	ctx := context.Background()
	const writes = 60
	var secrets []string
	var tokens []api.Token
	for range writes {
		tok := newToken(t)
		tokens = append(tokens, tok)
		secrets = append(secrets, tok.Reveal())
	}
	argCanary, envCanary := "canary-"+newToken(t).Reveal(), "canary-"+newToken(t).Reveal()
	w := watch(t, append([]string{argCanary, envCanary}, secrets...))

	for _, tok := range tokens {
		if _, err := tokenfile.Write(ctx, h, "main", tok); err != nil {
			t.Fatal(err)
		}
	}
	// The canaries go the way a careless writer would send the token: as an argument of the
	// command, or in its environment, for a process that reads stdin and ends, like a write's.
	// Each gets up to four times as many chances to be seen as the tokens had: on a busy machine
	// a sweep of /proc is slow, and a canary seen once in that many runs shows that a token sent
	// that way with every write would have been seen too.
	for range 4 * writes {
		if !w.saw(argCanary) {
			if _, err := h.Run(ctx, "sh -c 'cat > /dev/null' sh "+argCanary, strings.NewReader("x\n")); err != nil {
				t.Fatal(err)
			}
		}
		if !w.saw(envCanary) {
			if _, err := h.Run(ctx, "env KRAD_CANARY="+envCanary+" sh -c 'cat > /dev/null'", strings.NewReader("x\n")); err != nil {
				t.Fatal(err)
			}
		}
	}
	seen := w.stop()
	for i, s := range secrets {
		if seen[s] {
			t.Errorf("token %d of %d was in a process's command line or environment on the host", i+1, writes)
		}
		if strings.Contains(srv.Log(), s) {
			t.Errorf("token %d of %d is in sshd's log", i+1, writes)
		}
	}
	t.Logf("%d samples of every process while %d tokens were written", w.samples, writes)
	if !seen[argCanary] || !seen[envCanary] {
		t.Skipf("the sampling of /proc missed a canary in %d runs (command line: %v, environment: %v), so it cannot show that the tokens were absent: the machine is too busy for it. TestTokenOnlyOnStdin checks what the host is sent, whatever the load",
			4*writes, seen[argCanary], seen[envCanary])
	}
}

type watcher struct {
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	seen    map[string]bool
	samples int
}

// watch reads /proc/*/cmdline and /proc/*/environ of every process, over and over, until stop, and
// records which of secrets it saw.
func watch(t *testing.T, secrets []string) *watcher {
	w := &watcher{done: make(chan struct{}), seen: map[string]bool{}}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-w.done:
				return
			default:
			}
			dirs, _ := filepath.Glob("/proc/[0-9]*")
			for _, d := range dirs {
				for _, f := range []string{"cmdline", "environ"} {
					b, err := os.ReadFile(filepath.Join(d, f))
					if err != nil || len(b) == 0 {
						continue
					}
					for _, s := range secrets {
						if bytes.Contains(b, []byte(s)) {
							w.mu.Lock()
							w.seen[s] = true
							w.mu.Unlock()
						}
					}
				}
			}
			w.mu.Lock()
			w.samples++
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// saw says whether the watcher has seen s so far.
func (w *watcher) saw(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[s]
}

func (w *watcher) stop() map[string]bool {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

func TestRemove(t *testing.T) {
	srv, h := host(t)
	ctx := context.Background()
	path, err := tokenfile.Write(ctx, h, "main", newToken(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := tokenfile.Remove(ctx, h, path); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file is still there: %v", err)
	}
	if err := tokenfile.Remove(ctx, h, path); err != nil {
		t.Errorf("removing a file that is gone: %v, want no error", err)
	}

	for _, p := range []string{"", "token", "/etc/passwd", srv.Home + "/.krad-ade/run/main/other", srv.Home + "/.krad-ade/run/../run/main/token", srv.Home + "/.krad-ade/run/Main/token", srv.Home + "/.krad-ade/bin/main/token"} {
		if err := tokenfile.Remove(ctx, nil, p); err == nil {
			t.Errorf("remove %q: got no error", p)
		}
	}

	// A path under another home, even with the right shape, is not this host's token file.
	if _, err := tokenfile.Write(ctx, h, "main", newToken(t)); err != nil {
		t.Fatal(err)
	}
	err = tokenfile.Remove(ctx, h, "/elsewhere/.krad-ade/run/main/token")
	var re *shell.RefusedError
	if !errors.As(err, &re) || re.Reason != "elsewhere" {
		t.Errorf("got %v, want the path refused as not this host's", err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("the token file was removed: %v", err)
	}

	// A symbolic link in the token file's place is refused, and its target kept.
	target := filepath.Join(t.TempDir(), "kept")
	os.WriteFile(target, []byte("kept"), 0o600)
	os.Remove(path)
	os.Symlink(target, path)
	if err := tokenfile.Remove(ctx, h, path); !errors.As(err, &re) || re.Reason != "symlink" {
		t.Errorf("got %v, want the link refused", err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the link's target is gone: %v", err)
	}
}

// TestCheck: a reconnect's look at the token file says it holds the token only when it holds
// exactly what Write wrote, in a regular file of the user's that only the user can read; anything
// else is to be written again, and what Write refuses the look refuses too.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	srv, h := host(t)
	tok := newToken(t)
	if path, holds, err := tokenfile.Check(ctx, h, "main", tok); err != nil || holds || path != "" {
		t.Fatalf("before any write: got %q, holds %v, %v; want no file held, no error", path, holds, err)
	}
	path, err := tokenfile.Write(ctx, h, "main", tok)
	if err != nil {
		t.Fatal(err)
	}
	if got, holds, err := tokenfile.Check(ctx, h, "main", tok); err != nil || !holds || got != path {
		t.Fatalf("after the write: got %q, holds %v, %v; want %q held", got, holds, err, path)
	}
	if _, holds, err := tokenfile.Check(ctx, h, "main", newToken(t)); err != nil || holds {
		t.Errorf("another token: holds %v, %v; want not held", holds, err)
	}
	if _, holds, err := tokenfile.Check(ctx, h, "other", tok); err != nil || holds {
		t.Errorf("another instance: holds %v, %v; want not held", holds, err)
	}

	stale := func(what string, change func()) {
		t.Helper()
		if _, err := tokenfile.Write(ctx, h, "main", tok); err != nil {
			t.Fatal(err)
		}
		change()
		if _, holds, err := tokenfile.Check(ctx, h, "main", tok); err != nil || holds {
			t.Errorf("%s: holds %v, %v; want not held, no error", what, holds, err)
		}
		os.Remove(path) // the write refuses a link or a folder there (TestWriteRefuses)
	}
	stale("readable by others", func() { os.Chmod(path, 0o644) })
	stale("not writable by its owner", func() { os.Chmod(path, 0o400) })
	stale("a newline short", func() { os.WriteFile(path, []byte(tok.Reveal()), 0o600) })
	stale("removed", func() { os.Remove(path) })
	stale("a symbolic link to the token", func() {
		elsewhere := filepath.Join(t.TempDir(), "token")
		os.WriteFile(elsewhere, []byte(tok.Reveal()+"\n"), 0o600)
		os.Remove(path)
		if err := os.Symlink(elsewhere, path); err != nil {
			t.Fatal(err)
		}
	})
	stale("a folder in its place", func() { os.Remove(path); os.Mkdir(path, 0o700) })

	// What Write refuses, the look refuses, with the same reason, and changes nothing there.
	os.RemoveAll(filepath.Join(srv.Home, ".krad-ade", "run"))
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(srv.Home, ".krad-ade", "run")); err != nil {
		t.Fatal(err)
	}
	_, _, err = tokenfile.Check(ctx, h, "main", tok)
	var re *shell.RefusedError
	if !errors.As(err, &re) || re.Reason != "symlink" || !strings.HasPrefix(err.Error(), "look at the token file: ") {
		t.Errorf("a symbolic link for ~/.krad-ade/run: got %v, want it refused", err)
	}
	if n := names(t, target); len(n) != 0 {
		t.Errorf("the link's target holds %q, want it untouched", n)
	}
}
