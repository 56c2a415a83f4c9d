//go:build e2e

package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/e2e"
	"github.com/krad-ade/krad/internal/version"
)

// TestHostImage checks the recipe's fixes are in the image: no host keys baked in (each container
// makes its own), pam_loginuid optional, no usrmerge package (the merged-usr hook; perl is there,
// for git), git for groups, the users, and sshd's settings.
func TestHostImage(t *testing.T) {
	t.Parallel()
	checkHostImage(t, e2e.HostImage(t), "")
}

// TestHostImageArm64 checks the same of the linux/arm64 hosts' image, built with qemu emulation
// (skipped, with the reason, where this machine cannot run arm64 programs), and that its programs
// are arm64's: uname -m says aarch64, dpkg's architecture is arm64.
func TestHostImageArm64(t *testing.T) {
	t.Parallel()
	checkHostImage(t, e2e.HostImageFor(t, "arm64"), `test "$(uname -m) $(dpkg --print-architecture)" = "aarch64 arm64" || echo "machine: $(uname -m) $(dpkg --print-architecture)"
`)
}

// checkHostImage runs the checks in a container of image, and more, a script that prints only what
// is wrong.
func checkHostImage(t *testing.T, image, more string) {
	t.Helper()
	script := more + `set -e
if ls /etc/ssh/ssh_host_* >/dev/null 2>&1; then echo "host keys baked in"; fi
grep -Eq '^session[[:space:]]+optional[[:space:]]+pam_loginuid\.so' /etc/pam.d/sshd || echo "pam_loginuid not optional"
grep -Eq '^session[[:space:]]+required[[:space:]]+pam_loginuid\.so' /etc/pam.d/sshd && echo "pam_loginuid required"
for pkg in usrmerge; do
	if [ "$(dpkg-query -W -f '${Status}' $pkg 2>/dev/null)" = "install ok installed" ]; then echo "$pkg installed"; fi
done
for cmd in sshd tmux git ss ps pgrep bash timeout; do command -v $cmd >/dev/null || echo "no $cmd"; done
test "$(id -u krad):$(id -u other)" = "1000:1001" || echo "users: $(id krad) $(id other)"
test "$(stat -c %a:%u /home/krad)" = "700:1000" || echo "home of krad: $(stat -c %a:%u /home/krad)"
for type in ed25519 ecdsa; do ssh-keygen -q -N '' -t $type -f /etc/ssh/ssh_host_${type}_key; done
mkdir /run/sshd
sshd -T | grep -E '^(maxstartups|maxsessions|authorizedkeysfile|passwordauthentication) '`
	out := e2e.RunImage(t, image, "sh", "-c", script)
	want := []string{
		"maxsessions 200",
		"maxstartups 200:30:200",
		"passwordauthentication no",
		"authorizedkeysfile /etc/ssh/authorized_keys/%u",
	}
	got := strings.Split(out, "\n")
	if len(got) != len(want) {
		t.Fatalf("image check said:\n%s\nwant only sshd -T lines %q", out, want)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("sshd -T: no %q in:\n%s", w, out)
		}
	}
}

// versionJSON is what `krad version --json` prints.
type versionJSON struct {
	Version       string `json:"version"`
	APIVersion    int    `json:"api_version"`
	VariablesOnly bool   `json:"variables_only"`
}

func checkVersion(t *testing.T, out string) {
	t.Helper()
	var got versionJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("krad version --json printed %q: %v", out, err)
	}
	want := versionJSON{version.Build, api.Version, true}
	if got != want {
		t.Errorf("krad version --json = %+v, want %+v", got, want)
	}
}

// TestStaticKradRunsFromScratch runs the static krad in an image that holds nothing else: no
// libc, no loader, no shell.
func TestStaticKradRunsFromScratch(t *testing.T) {
	t.Parallel()
	image := e2e.StaticImage(t)
	for path, size := range e2e.ImageFiles(t, image) {
		if path != "/krad" && size != 0 {
			t.Errorf("image %s holds %s (%d bytes): want nothing but /krad", image, path, size)
		}
	}
	checkVersion(t, e2e.RunImage(t, image, "version", "--json"))
}

// TestStaticKradRunsOnHost copies the static krad into a Debian host with docker cp and runs it
// there as the host's user, in a docker exec and in an SSH session.
func TestStaticKradRunsOnHost(t *testing.T) {
	t.Parallel()
	krad := e2e.StaticKrad(t)
	lan := e2e.NewNetwork(t, "static", 25)
	a := e2e.StartHost(t, "a", lan, lan.Addr(10), e2e.HostOptions{})
	bin := readFile(t, krad)
	a.WriteFile(t, "/usr/local/bin/krad", bin, 0o755, "root")

	checkVersion(t, a.ExecAs(t, "krad", "krad", "version", "--json"))

	cfg := e2e.WriteSSHConfig(t, t.TempDir(), e2e.SSHEntry{Alias: "a", Host: a})
	out, err := cfg.Command(ctxFor(t, 1), "a", "krad", "version", "--json").Output()
	if err != nil {
		t.Fatalf("ssh a krad version --json: %v: %s", err, stderrOf(err))
	}
	checkVersion(t, string(out))
}
