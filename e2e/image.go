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
	"runtime"
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
# The two host keys each container makes as it starts: no RSA key, whose making outlasted 30 s
# on a loaded machine, starved of CPU while other hosts started beside it.
HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_ecdsa_key
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
for type in ed25519 ecdsa; do
	key=/etc/ssh/ssh_host_${type}_key
	[ -e $key ] || ssh-keygen -q -N '' -t $type -f $key
done
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
	imported  time.Duration // docker import (load); 0 when the image was cached
	how       string        // "docker import", or "docker load" for another processor
	waited    time.Duration // for another test package's build
	tarPath   string
	tarLength int64
}

func (b hostImageBuild) String() string {
	switch {
	case b.imported == 0:
		return fmt.Sprintf("image %s cached (waited %v for the build lock)", b.tag, b.waited.Round(time.Millisecond))
	case b.tarball == 0:
		return fmt.Sprintf("image %s made by %s in %v from the cached tarball %s (%d MB)", b.tag, b.how,
			b.imported.Round(time.Millisecond), b.tarPath, b.tarLength>>20)
	}
	return fmt.Sprintf("image %s built: mmdebstrap %v (%d MB tarball at %s), %s %v", b.tag,
		b.tarball.Round(time.Millisecond), b.tarLength>>20, b.tarPath, b.how, b.imported.Round(time.Millisecond))
}

// hostImages holds each architecture's image once it is found or built in this run.
var hostImages struct {
	mu     sync.Mutex
	byArch map[string]*hostImageOnce
}

type hostImageOnce struct {
	once  sync.Once
	build hostImageBuild
	err   error
}

// HostImage is the tag of the hosts' image for this machine's architecture, built on first use in
// this run, or found in Docker or in the cache folder by the hash of its recipe. A build that
// fails fails the test: the tests are never skipped for want of an image where Docker answers.
func HostImage(t testing.TB) string {
	t.Helper()
	return HostImageFor(t, runtime.GOARCH)
}

// HostImageFor is HostImage for the linux/arch hosts, of the same recipe (arch as Go names it:
// amd64, arm64). For another processor than this machine's it first calls [Emulate], which skips
// the test when this machine cannot run arch's programs; the image is then built with qemu
// emulation (mmdebstrap runs the packages' scripts under it) and loaded as a linux/arch image:
// its containers are created with --platform linux/arch.
func HostImageFor(t testing.TB, arch string) string {
	t.Helper()
	Emulate(t, arch)
	hostImages.mu.Lock()
	if hostImages.byArch == nil {
		hostImages.byArch = map[string]*hostImageOnce{}
	}
	img := hostImages.byArch[arch]
	if img == nil {
		img = &hostImageOnce{}
		hostImages.byArch[arch] = img
	}
	hostImages.mu.Unlock()
	img.once.Do(func() {
		img.build, img.err = buildHostImage(context.Background(), arch)
		if img.err == nil {
			t.Logf("hosts' linux/%s %v", arch, img.build)
		}
	})
	if img.err != nil {
		t.Fatalf("the hosts' linux/%s image: %v", arch, img.err)
	}
	return img.build.tag
}

// hostRecipe is everything the image is built from, its hash naming the image and its tarball.
type hostRecipe struct {
	arch    string // GOARCH of the image's programs
	suite   string
	sources []string // apt sources files of this machine
	hash    string
}

// foreign says whether the image is for another processor than this machine's.
func (r hostRecipe) foreign() bool { return r.arch != runtime.GOARCH }

// repo is the image's repository name: krad-e2e-host for this machine's processor,
// krad-e2e-host-ARCH for another.
func (r hostRecipe) repo() string {
	if r.foreign() {
		return hostImageRepo + "-" + r.arch
	}
	return hostImageRepo
}

// cache is the folder of the image's tarball and build lock: the cache folder for this machine's
// processor, its subfolder ARCH for another, so that each architecture's stale tarballs are
// removed by its own builds only, and an emulated build (minutes) holds no other's lock.
func (r hostRecipe) cache() string {
	if r.foreign() {
		return filepath.Join(theRun.cache, r.arch)
	}
	return theRun.cache
}

func newHostRecipe(arch string) (hostRecipe, error) {
	r := hostRecipe{arch: arch}
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
	if r.foreign() {
		// This machine's own image keeps the hash it had before there were others.
		fmt.Fprintf(h, "architecture %s\n", r.arch)
	}
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

// buildHostImage finds or builds the image for arch, under a lock that parallel test packages
// share.
func buildHostImage(ctx context.Context, arch string) (hostImageBuild, error) {
	recipe, err := newHostRecipe(arch)
	if err != nil {
		return hostImageBuild{}, err
	}
	b := hostImageBuild{
		tag:     recipe.repo() + ":" + recipe.hash,
		tarPath: filepath.Join(recipe.cache(), "host-"+recipe.hash+".tar"),
	}
	start := time.Now()
	lock, err := lockFile(filepath.Join(recipe.cache(), "host-image.lock"), true)
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
	b.how = "docker import"
	if recipe.foreign() {
		b.how = "docker load"
		err = loadForeignImage(ctx, recipe, b.tarPath, b.tag)
	} else {
		_, err = dockerNoTimeout(ctx, nil, "import",
			"--change", `CMD ["`+hostEntrypoint+`"]`,
			"--change", "LABEL "+label+"="+hostImageLabel,
			"--change", "LABEL "+hostRecipeLabel+"="+recipe.hash,
			b.tarPath, b.tag)
	}
	if err != nil {
		return b, err
	}
	b.imported = time.Since(start)
	removeStaleHostImages(ctx, recipe)
	return b, nil
}

// hostEntrypoint is the hosts' command, written by hostCustomize.
const hostEntrypoint = "/usr/local/sbin/krad-e2e-entrypoint"

// removeStaleHostImages removes the host images and tarballs of the recipe's architecture built
// from other recipes. An image a container still uses stays; that is no error.
func removeStaleHostImages(ctx context.Context, recipe hostRecipe) {
	out, err := docker(ctx, nil, "image", "ls", "--filter", "label="+label+"="+hostImageLabel, "--format", "{{.Repository}}:{{.Tag}}")
	if err == nil {
		for _, tag := range lines(out) {
			if tag != recipe.repo()+":"+recipe.hash && strings.HasPrefix(tag, recipe.repo()+":") {
				docker(ctx, nil, "image", "rm", tag)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(recipe.cache(), "host-*.tar*"))
	for _, p := range files {
		if !strings.HasPrefix(filepath.Base(p), "host-"+recipe.hash+".tar") {
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
	work, err := os.MkdirTemp(filepath.Dir(dst), "build-")
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
	if recipe.foreign() {
		// Under qemu emulation (Emulate): the packages' maintainer scripts run as arch's
		// programs.
		args = append(args, "--architectures="+recipe.arch)
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
	if err := needDebs(ctx, "mmdebstrap"); err != nil {
		return err
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
