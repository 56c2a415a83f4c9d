//go:build e2e

package e2e

import (
	"context"
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

// Hosts of another processor (arm64 on an amd64 machine) run under Debian's qemu-user-static:
// the kernel's binfmt_misc hands each of their programs to qemu-ARCH-static. The registration
// must carry the F flag (fix binary: the kernel opens the interpreter when it is registered), so
// that it works inside containers, whose filesystems have no qemu.

// qemuNames maps GOARCH to qemu's name for the processor.
var qemuNames = map[string]string{"arm64": "aarch64", "amd64": "x86_64"}

const binfmtDir = "/proc/sys/fs/binfmt_misc"

// ErrNoEmulation is wrapped by every reason this machine cannot run another processor's programs.
var ErrNoEmulation = errors.New("this machine cannot run programs of another processor")

var emulation struct {
	mu   sync.Mutex
	done map[string]error
}

// Emulate makes this machine run linux/arch programs, in containers too, and skips the test with
// the precise reason when it cannot: qemu-user-static (and binfmt-support) installed with apt-get
// when missing, binfmt_misc mounted on /proc/sys/fs/binfmt_misc when it is not, and qemu's
// registration for arch enabled with the F flag. Installing and registering need root (or
// password-less sudo for apt-get). Nothing to do for this machine's own architecture.
func Emulate(t testing.TB, arch string) {
	t.Helper()
	if err := emulate(context.Background(), arch); err != nil {
		t.Skipf("linux/%s hosts cannot run here: %v", arch, err)
	}
}

func emulate(ctx context.Context, arch string) error {
	if arch == runtime.GOARCH {
		return nil
	}
	emulation.mu.Lock()
	defer emulation.mu.Unlock()
	if err, ok := emulation.done[arch]; ok {
		return err
	}
	err := setUpEmulation(ctx, arch)
	if emulation.done == nil {
		emulation.done = map[string]error{}
	}
	emulation.done[arch] = err
	return err
}

func setUpEmulation(ctx context.Context, arch string) error {
	q, ok := qemuNames[arch]
	if !ok {
		return fmt.Errorf("%w: no qemu name for %s", ErrNoEmulation, arch)
	}
	_, noQemu := exec.LookPath("qemu-" + q + "-static")
	_, noUpdate := exec.LookPath("update-binfmts")
	if noQemu != nil || noUpdate != nil {
		if err := needDebs(ctx, "qemu-user-static", "binfmt-support"); err != nil {
			return fmt.Errorf("%w: %v", ErrNoEmulation, err)
		}
	}
	if _, err := os.Stat(binfmtDir + "/status"); err != nil {
		if os.Getuid() != 0 {
			return fmt.Errorf("%w: binfmt_misc is not mounted on %s, and only root may mount it", ErrNoEmulation, binfmtDir)
		}
		out, err := exec.CommandContext(ctx, "mount", "-t", "binfmt_misc", "binfmt_misc", binfmtDir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: the kernel refused to mount binfmt_misc on %s: %v: %s", ErrNoEmulation, binfmtDir, err, tail(string(out), 500))
		}
	}
	entry := binfmtDir + "/qemu-" + q
	if st, err := readBinfmt(entry); err != nil || !st.enabled {
		if os.Getuid() != 0 {
			return fmt.Errorf("%w: qemu-%s is not registered in binfmt_misc, and only root may register it", ErrNoEmulation, q)
		}
		// binfmt-support's update-binfmts reads /usr/share/binfmts/qemu-ARCH, which asks for
		// the F flag (fix_binary yes).
		for _, args := range [][]string{{"--import", "qemu-" + q}, {"--enable", "qemu-" + q}} {
			cmd := exec.CommandContext(ctx, "update-binfmts", args...)
			if out, err := cmd.CombinedOutput(); err != nil && args[0] == "--enable" {
				return fmt.Errorf("%w: update-binfmts %s: %v: %s", ErrNoEmulation, strings.Join(args, " "), err, tail(string(out), 500))
			}
		}
	}
	st, err := readBinfmt(entry)
	switch {
	case err != nil:
		return fmt.Errorf("%w: the kernel did not take qemu-%s's registration: %v", ErrNoEmulation, q, err)
	case !st.enabled:
		return fmt.Errorf("%w: qemu-%s's registration in binfmt_misc stays disabled", ErrNoEmulation, q)
	case !strings.Contains(st.flags, "F"):
		return fmt.Errorf("%w: qemu-%s is registered without the F flag (flags %q), so containers, which have no %s, cannot run its programs: update-binfmts --disable qemu-%s, then run this again", ErrNoEmulation, q, st.flags, st.interpreter, q)
	}
	return nil
}

// binfmtEntry is what /proc/sys/fs/binfmt_misc/NAME says.
type binfmtEntry struct {
	enabled     bool
	interpreter string
	flags       string
}

func readBinfmt(path string) (binfmtEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return binfmtEntry{}, err
	}
	var e binfmtEntry
	for _, l := range strings.Split(string(b), "\n") {
		switch k, v, _ := strings.Cut(l, " "); {
		case l == "enabled":
			e.enabled = true
		case k == "interpreter":
			e.interpreter = v
		case k == "flags:":
			e.flags = v
		}
	}
	return e, nil
}

// needDebs installs Debian packages with apt-get: as root, or through sudo when that needs no
// password. Its error says what to run. The test packages that install something run in
// parallel (one the image's mmdebstrap, another qemu-user-static's binfmt-support), and apt-get
// refuses to run beside another: they take turns under a lock of their own, and each apt-get
// waits a while for dpkg's lock too, which another program may hold.
func needDebs(ctx context.Context, pkgs ...string) error {
	var sudo []string
	if os.Getuid() != 0 {
		if exec.CommandContext(ctx, "sudo", "-n", "true").Run() != nil {
			return fmt.Errorf("%s missing, and this user cannot install it (not root, no password-less sudo): run 'apt-get install %s' as root",
				strings.Join(pkgs, " and "), strings.Join(pkgs, " "))
		}
		sudo = []string{"sudo", "-n"}
	}
	lock, err := lockFile(filepath.Join(os.TempDir(), "krad-e2e-apt.lock"), true)
	if err != nil {
		return err
	}
	defer lock.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	wait := []string{"-o", "DPkg::Lock::Timeout=120"}
	for _, args := range [][]string{append([]string{"apt-get", "update", "-qq"}, wait...), append(append([]string{"apt-get", "install", "-y", "-qq"}, wait...), pkgs...)} {
		args = append(sudo, args...)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("installing %s: %s: %w: %s", strings.Join(pkgs, " "), strings.Join(args, " "), err, tail(string(out), 2000))
		}
	}
	return nil
}
