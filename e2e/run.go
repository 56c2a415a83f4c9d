//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// theRun is this test binary's run: set up by Main before any test, read-only afterwards.
var theRun struct {
	id       string   // labels this run's Docker objects; names them too
	dir      string   // a temporary folder for the run: its key, the static krad
	cache    string   // the cache folder shared by runs: the host image's tarball, locks
	identity Identity // the key every host authorizes for its users
}

// Main runs a test package's tests on the hosts: call it from TestMain. Before the tests it checks
// that a Docker engine answers (the run fails if none does), takes this run's lock, removes what
// runs that died left behind, and makes the run's SSH key; after them it removes every Docker
// object of this run that a test's cleanup did not. The functions after run when the tests have
// ended, before that removal: a package's own cleanups, such as testbin.Cleanup.
func Main(m *testing.M, after ...func()) {
	os.Exit(runMain(m, after))
}

func runMain(m *testing.M, after []func()) int {
	ctx := context.Background()
	if err := dockerAnswers(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: error: %v\n", err)
		fmt.Fprintf(os.Stderr, "e2e: hint: the e2e tests need a Docker engine this user may use (root or the docker group)\n")
		return 1
	}
	cache, err := cacheDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: error: %v\n", err)
		return 1
	}
	theRun.cache = cache
	theRun.id = newRunID()
	runLock, err := lockFile(filepath.Join(cache, "runs", theRun.id+".lock"), true)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: error: %v\n", err)
		return 1
	}
	defer func() {
		os.Remove(runLock.Name())
		runLock.Close()
	}()
	if err := removeDeadRuns(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: error: removing what earlier runs left: %v\n", err)
		return 1
	}
	theRun.dir, err = os.MkdirTemp("", "krad-e2e-"+theRun.id+"-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: error: %v\n", err)
		return 1
	}
	defer os.RemoveAll(theRun.dir)
	theRun.identity, err = newIdentity(ctx, theRun.dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: error: %v\n", err)
		return 1
	}

	code := m.Run()
	for _, f := range after {
		f()
	}

	objs, err := listLabelled(ctx)
	if err == nil {
		err = removeRun(ctx, objs, theRun.id)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: error: removing this run's containers and networks: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// newRunID is 12 random hex digits: short enough for container names, unlikely to repeat.
func newRunID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// isRunID says whether a krad-e2e label's value names a run (the host image's does not).
func isRunID(s string) bool {
	if len(s) != 12 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// cacheDir is the folder kept between runs: $XDG_CACHE_HOME/krad-e2e or ~/.cache/krad-e2e, else
// /var/tmp/krad-e2e-UID.
func cacheDir() (string, error) {
	dir := filepath.Join("/var/tmp", fmt.Sprintf("krad-e2e-%d", os.Getuid()))
	if base, err := os.UserCacheDir(); err == nil {
		dir = filepath.Join(base, "krad-e2e")
	}
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o700); err != nil {
		return "", fmt.Errorf("cache folder: %w", err)
	}
	return dir, nil
}

// lockFile opens (creating) path and takes an exclusive flock on it, waiting for it when wait is
// set. The kernel drops the lock when the process dies, however it dies: that is how a run tells
// a dead run's leftovers from a live run's objects, and how parallel test packages take turns
// building the image. The lock is held only once path still names the file locked: a run that
// finds another dead removes that run's lock file while it holds the lock, and a run that opened
// the file just before that removal would otherwise hold a lock on a file no other run can see,
// and look dead to the next one (which would remove its containers).
func lockFile(path string, wait bool) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		for {
			err = syscall.Flock(int(f.Fd()), how)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		held, herr := f.Stat()
		named, nerr := os.Stat(path)
		if herr == nil && nerr == nil && os.SameFile(held, named) {
			return f, nil
		}
		f.Close() // removed or replaced meanwhile: lock the file path names now
	}
}

// runIsAlive says whether the run id still holds its lock. A run whose lock file is missing is
// dead: every run makes its lock file before it creates anything.
func runIsAlive(id string) bool {
	f, err := lockFile(filepath.Join(theRun.cache, "runs", id+".lock"), false)
	if err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	os.Remove(f.Name())
	f.Close()
	return false
}

// removeDeadRuns removes the labelled containers, networks and images of runs that are no longer
// alive, and the lock files and temporary folders they left.
func removeDeadRuns(ctx context.Context) error {
	objs, err := listLabelled(ctx)
	if err != nil {
		return err
	}
	runs := map[string]bool{}
	for _, m := range []map[string][]string{objs.containers, objs.networks, objs.images} {
		for id := range m {
			if isRunID(id) {
				runs[id] = true
			}
		}
	}
	locks, _ := filepath.Glob(filepath.Join(theRun.cache, "runs", "*.lock"))
	for _, l := range locks {
		if id := strings.TrimSuffix(filepath.Base(l), ".lock"); isRunID(id) {
			runs[id] = true
		}
	}
	delete(runs, theRun.id)
	var errs []error
	for id := range runs {
		if runIsAlive(id) {
			continue
		}
		if n := len(objs.containers[id]) + len(objs.networks[id]) + len(objs.images[id]); n > 0 {
			fmt.Fprintf(os.Stderr, "e2e: removing the %d Docker objects run %s left behind\n", n, id)
		}
		if err := removeRun(ctx, objs, id); err != nil {
			errs = append(errs, err)
		}
		dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "krad-e2e-"+id+"-*"))
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
	return errors.Join(errs...)
}

// Identity is the run's SSH key: every host authorizes it for its users krad and other.
type Identity struct {
	PrivateKey string // path of the private key file (0600, no passphrase)
	PublicKey  string // the authorized_keys line
}

// RunIdentity is this run's SSH key.
func RunIdentity() Identity { return theRun.identity }

func newIdentity(ctx context.Context, dir string) (Identity, error) {
	key := filepath.Join(dir, "id_ed25519")
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "krad-e2e", "-f", key).CombinedOutput()
	if err != nil {
		return Identity{}, fmt.Errorf("ssh-keygen (OpenSSH's client tools are needed): %w: %s", err, tail(string(out), 500))
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		return Identity{}, fmt.Errorf("run key: %w", err)
	}
	return Identity{PrivateKey: key, PublicKey: strings.TrimSpace(string(pub))}, nil
}
