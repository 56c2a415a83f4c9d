//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The hosts' image is Debian's essential set plus these packages, from the machine's own apt
// sources, with the merged-usr hook (without it the usrmerge package would be pulled in), and
// without documentation. git is there because groups run git on the host (it brings perl).
var hostPackages = []string{"openssh-server", "iproute2", "procps", "tmux", "git"}

var hostDpkgOptions = []string{
	"path-exclude=/usr/share/doc/*",
	"path-exclude=/usr/share/man/*",
	"path-exclude=/usr/share/info/*",
	"path-exclude=/usr/share/locale/*",
}

const mergedUsrHooks = "/usr/share/mmdebstrap/hooks/merged-usr"

// hostCustomize is mmdebstrap's customize hook: it runs on this machine with the image's root
// filesystem as $1. Each step is something found by running the image.
const hostCustomize = `#!/bin/sh
set -eu
root=$1

# openssh-server's package made host keys at install: each container makes its own at start.
rm -f "$root"/etc/ssh/ssh_host_*
# The build copied this machine's own; Docker provides them at run time.
rm -f "$root"/etc/hostname "$root"/etc/resolv.conf
# Under Docker's default capabilities pam_loginuid cannot set the loginuid, and "required" would
# end every session.
sed -i 's/^session\([[:space:]]\+\)required\([[:space:]]\+\)pam_loginuid\.so/session\1optional\2pam_loginuid.so/' "$root"/etc/pam.d/sshd
grep -q '^session[[:space:]]\+optional[[:space:]]\+pam_loginuid\.so' "$root"/etc/pam.d/sshd
mkdir -p "$root"/etc/ssh/authorized_keys "$root"/etc/krad-e2e

cat >"$root"/etc/ssh/sshd_config.d/50-krad-e2e.conf <<'EOF'
# Keys only, from /etc/ssh/authorized_keys/USER (the harness puts them there, so a home emptied
# by a restart keeps its user's access), and room for many parallel connections and sessions.
AuthorizedKeysFile /etc/ssh/authorized_keys/%u
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
MaxStartups 200
MaxSessions 200
EOF

# krad is the user the app connects as; other is another user of the same host.
for user in krad:1000 other:1001; do
	name=${user%:*} id=${user#*:}
	echo "$name:x:$id:$id:krad e2e:/home/$name:/bin/bash" >>"$root"/etc/passwd
	echo "$name:x:$id:" >>"$root"/etc/group
	echo "$name:*:20000:0:99999:7:::" >>"$root"/etc/shadow
	if [ -f "$root"/etc/gshadow ]; then echo "$name:!::" >>"$root"/etc/gshadow; fi
	mkdir -p "$root"/home/$name
	chown $id:$id "$root"/home/$name
	chmod 0700 "$root"/home/$name
done

cat >"$root"/usr/local/sbin/krad-e2e-entrypoint <<'EOF'
#!/bin/sh
# The hosts' command: host keys made by each new container, sshd's /run/sshd (the image's /run
# is empty), homes owned by their users (they may be tmpfs), tmux or git removed where the
# harness asked, then sshd as pid 1.
set -eu
mkdir -p /run/sshd
ssh-keygen -A >/dev/null
for user in krad:1000 other:1001; do
	chown ${user#*:}:${user#*:} /home/${user%:*}
	chmod 0700 /home/${user%:*}
done
if [ -e /etc/krad-e2e/without-tmux ]; then rm -f /usr/bin/tmux; fi
if [ -e /etc/krad-e2e/without-git ]; then rm -f /usr/bin/git; fi
exec /usr/sbin/sshd -D -e
EOF
chmod 0755 "$root"/usr/local/sbin/krad-e2e-entrypoint
`

// hostImageLabel is the krad-e2e label's value on the cached host image; hostRecipeLabel holds
// the hash of the recipe it was built from.
const (
	hostImageLabel  = "host-image"
	hostRecipeLabel = "krad-e2e.recipe"
	hostImageRepo   = "krad-e2e-host"
)

// hostImageBuild is what HostImage did, for the tests to report.
type hostImageBuild struct {
	tag       string
	tarball   time.Duration // mmdebstrap; 0 when the tarball was cached
	imported  time.Duration // docker import; 0 when the image was cached
	waited    time.Duration // for another test package's build
	tarPath   string
	tarLength int64
}

func (b hostImageBuild) String() string {
	switch {
	case b.imported == 0:
		return fmt.Sprintf("image %s cached (waited %v for the build lock)", b.tag, b.waited.Round(time.Millisecond))
	case b.tarball == 0:
		return fmt.Sprintf("image %s imported in %v from the cached tarball %s (%d MB)", b.tag,
			b.imported.Round(time.Millisecond), b.tarPath, b.tarLength>>20)
	}
	return fmt.Sprintf("image %s built: mmdebstrap %v (%d MB tarball at %s), docker import %v", b.tag,
		b.tarball.Round(time.Millisecond), b.tarLength>>20, b.tarPath, b.imported.Round(time.Millisecond))
}

var hostImage struct {
	once  sync.Once
	build hostImageBuild
	err   error
}

// HostImage is the tag of the hosts' image, built on first use in this run, or found in Docker or
// in the cache folder by the hash of its recipe. A build that fails fails the test: the tests are
// never skipped for want of an image where Docker answers.
func HostImage(t testing.TB) string {
	t.Helper()
	hostImage.once.Do(func() {
		hostImage.build, hostImage.err = buildHostImage(context.Background())
		if hostImage.err == nil {
			t.Logf("hosts' %v", hostImage.build)
		}
	})
	if hostImage.err != nil {
		t.Fatalf("the hosts' image: %v", hostImage.err)
	}
	return hostImage.build.tag
}

// hostRecipe is everything the image is built from, its hash naming the image and its tarball.
type hostRecipe struct {
	suite   string
	sources []string // apt sources files of this machine
	hash    string
}

func newHostRecipe() (hostRecipe, error) {
	var r hostRecipe
	var err error
	if r.suite, err = debianSuite(); err != nil {
		return r, err
	}
	r.sources, _ = filepath.Glob("/etc/apt/sources.list.d/*.sources")
	if len(r.sources) == 0 {
		if _, err := os.Stat("/etc/apt/sources.list"); err == nil {
			r.sources = []string{"/etc/apt/sources.list"}
		}
	}
	if len(r.sources) == 0 {
		return r, errors.New("no apt sources on this machine (/etc/apt/sources.list.d/*.sources or /etc/apt/sources.list): the image is built from them")
	}
	h := sha256.New()
	fmt.Fprintf(h, "krad-e2e host image 1\n%s\n%q\n%q\n%s\n", r.suite, hostPackages, hostDpkgOptions, hostCustomize)
	for _, s := range r.sources {
		b, err := os.ReadFile(s)
		if err != nil {
			return r, fmt.Errorf("apt sources: %w", err)
		}
		fmt.Fprintf(h, "%s\n%s\n", s, b)
	}
	r.hash = hex.EncodeToString(h.Sum(nil))[:16]
	return r, nil
}

// debianSuite is this machine's release codename (bookworm, trixie…), from /etc/os-release.
func debianSuite() (string, error) {
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return "", fmt.Errorf("release of this machine: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VERSION_CODENAME="); ok {
			if v = strings.Trim(v, `"'`); v != "" {
				return v, nil
			}
		}
	}
	return "", errors.New("release of this machine: no VERSION_CODENAME in /etc/os-release (the hosts' image is built with this machine's Debian suite)")
}

// buildHostImage finds or builds the image, under a lock that parallel test packages share.
func buildHostImage(ctx context.Context) (hostImageBuild, error) {
	recipe, err := newHostRecipe()
	if err != nil {
		return hostImageBuild{}, err
	}
	b := hostImageBuild{
		tag:     hostImageRepo + ":" + recipe.hash,
		tarPath: filepath.Join(theRun.cache, "host-"+recipe.hash+".tar"),
	}
	start := time.Now()
	lock, err := lockFile(filepath.Join(theRun.cache, "host-image.lock"), true)
	if err != nil {
		return b, err
	}
	defer lock.Close()
	b.waited = time.Since(start)

	if got, err := docker(ctx, nil, "image", "inspect", "--format", `{{index .Config.Labels "`+hostRecipeLabel+`"}}`, b.tag); err == nil && got == recipe.hash {
		return b, nil
	}
	if _, err := os.Stat(b.tarPath); err != nil {
		start := time.Now()
		if err := mmdebstrap(ctx, recipe, b.tarPath); err != nil {
			return b, err
		}
		b.tarball = time.Since(start)
	}
	if fi, err := os.Stat(b.tarPath); err == nil {
		b.tarLength = fi.Size()
	}
	start = time.Now()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	_, err = dockerNoTimeout(ctx, nil, "import",
		"--change", `CMD ["/usr/local/sbin/krad-e2e-entrypoint"]`,
		"--change", "LABEL "+label+"="+hostImageLabel,
		"--change", "LABEL "+hostRecipeLabel+"="+recipe.hash,
		b.tarPath, b.tag)
	if err != nil {
		return b, err
	}
	b.imported = time.Since(start)
	removeStaleHostImages(ctx, recipe.hash)
	return b, nil
}

// removeStaleHostImages removes the host images and tarballs of other recipes. An image a
// container still uses stays; that is no error.
func removeStaleHostImages(ctx context.Context, hash string) {
	out, err := docker(ctx, nil, "image", "ls", "--filter", "label="+label+"="+hostImageLabel, "--format", "{{.Repository}}:{{.Tag}}")
	if err == nil {
		for _, tag := range lines(out) {
			if tag != hostImageRepo+":"+hash && strings.HasPrefix(tag, hostImageRepo+":") {
				docker(ctx, nil, "image", "rm", tag)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(theRun.cache, "host-*.tar*"))
	for _, p := range files {
		if !strings.HasPrefix(filepath.Base(p), "host-"+hash+".tar") {
			os.Remove(p)
		}
	}
}

// mmdebstrap writes the image's root filesystem tarball at dst, through a temporary file.
func mmdebstrap(ctx context.Context, recipe hostRecipe, dst string) error {
	if err := needMmdebstrap(ctx); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(mergedUsrHooks, "setup00.sh")); err != nil {
		return fmt.Errorf("mmdebstrap's merged-usr hook: %w", err)
	}
	work, err := os.MkdirTemp(theRun.cache, "build-")
	if err != nil {
		return fmt.Errorf("build folder: %w", err)
	}
	defer os.RemoveAll(work)
	hook := filepath.Join(work, "customize")
	if err := os.WriteFile(hook, []byte(hostCustomize), 0o700); err != nil {
		return fmt.Errorf("customize hook: %w", err)
	}
	tmp := filepath.Join(work, "rootfs.tar")
	args := []string{
		"--variant=essential",
		"--include=" + strings.Join(hostPackages, ","),
		"--hook-dir=" + mergedUsrHooks,
		"--customize-hook=" + hook,
		"--format=tar",
	}
	for _, o := range hostDpkgOptions {
		args = append(args, "--dpkgopt="+o)
	}
	args = append(args, recipe.suite, tmp)
	args = append(args, recipe.sources...)

	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mmdebstrap", args...)
	cmd.WaitDelay = 10 * time.Second
	logPath := dst + ".log"
	log, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("mmdebstrap log: %w", err)
	}
	defer log.Close()
	fmt.Fprintf(log, "$ mmdebstrap %s\n", strings.Join(args, " "))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(logPath)
		return fmt.Errorf("mmdebstrap: %w: %s (its command and whole log: %s)", err, tail(string(out), 3000), logPath)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("tarball: %w", err)
	}
	return nil
}

// needMmdebstrap installs mmdebstrap with apt-get when it is missing: as root, or through sudo
// when that needs no password.
func needMmdebstrap(ctx context.Context) error {
	if _, err := exec.LookPath("mmdebstrap"); err == nil {
		return nil
	}
	var sudo []string
	if os.Getuid() != 0 {
		if exec.CommandContext(ctx, "sudo", "-n", "true").Run() != nil {
			return errors.New("mmdebstrap is not installed, and this user cannot install it (not root, no password-less sudo): run 'apt-get install mmdebstrap' as root")
		}
		sudo = []string{"sudo", "-n"}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"apt-get", "update", "-qq"}, {"apt-get", "install", "-y", "-qq", "mmdebstrap"}} {
		args = append(sudo, args...)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("installing mmdebstrap: %s: %w: %s", strings.Join(args, " "), err, tail(string(out), 2000))
		}
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return fmt.Errorf("installing mmdebstrap: %w", err)
	}
	return nil
}

var staticKrad struct {
	once sync.Once
	path string
	err  error
}

// StaticKrad is the path of the static krad (./cmd/krad-static built with CGO_ENABLED=0 and
// -trimpath for this machine's architecture), built once per run.
func StaticKrad(t testing.TB) string {
	t.Helper()
	staticKrad.once.Do(func() {
		p := filepath.Join(theRun.dir, "krad")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", p, "github.com/krad-ade/krad/cmd/krad-static")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			staticKrad.err = fmt.Errorf("go build ./cmd/krad-static: %w: %s", err, tail(string(out), 2000))
			return
		}
		staticKrad.path = p
	})
	if staticKrad.err != nil {
		t.Fatalf("the static krad: %v", staticKrad.err)
	}
	return staticKrad.path
}

var staticImage struct {
	once sync.Once
	tag  string
	err  error
}

// StaticImage is the tag of an image FROM scratch holding nothing but the static krad, as /krad,
// its entrypoint. Built once per run with docker build (FROM scratch needs no registry), and
// removed with the run's other objects.
func StaticImage(t testing.TB) string {
	t.Helper()
	bin := StaticKrad(t)
	staticImage.once.Do(func() {
		ctx := context.Background()
		dir, err := os.MkdirTemp(theRun.dir, "static-image-")
		if err != nil {
			staticImage.err = err
			return
		}
		defer os.RemoveAll(dir)
		b, err := os.ReadFile(bin)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "krad"), b, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY krad /krad\nENTRYPOINT [\"/krad\"]\n"), 0o644)
		}
		if err != nil {
			staticImage.err = fmt.Errorf("build context: %w", err)
			return
		}
		tag := "krad-e2e-static:" + theRun.id
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if _, err := dockerNoTimeout(ctx, nil, "build", "--quiet", "--label", label+"="+theRun.id, "--tag", tag, dir); err != nil {
			staticImage.err = err
			return
		}
		staticImage.tag = tag
	})
	if staticImage.err != nil {
		t.Fatalf("the static krad's image: %v", staticImage.err)
	}
	return staticImage.tag
}
