//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Network is a Docker bridge network of the run with a pinned subnet. It is internal: its
// containers reach each other and this machine (the bridge's address, .1), nothing beyond.
type Network struct {
	Name   string       // the Docker network's name
	Prefix netip.Prefix // 172.29.N.0/24
}

// NewNetwork creates the network 172.29.n.0/24 (n from 1 to 254, chosen by the test so that tests
// running at the same time do not collide), removed when the test ends. A subnet that overlaps an
// address of this machine is refused.
func NewNetwork(t testing.TB, name string, n int) *Network {
	t.Helper()
	if n < 1 || n > 254 {
		t.Fatalf("network %s: subnet number %d is not in 1…254", name, n)
	}
	nw := &Network{
		Name:   fmt.Sprintf("krad-e2e-%s-%d-%s", theRun.id, n, name),
		Prefix: netip.MustParsePrefix(fmt.Sprintf("172.29.%d.0/24", n)),
	}
	if err := nw.free(); err != nil {
		t.Fatal(err)
	}
	_, err := docker(context.Background(), nil, "network", "create", "--driver", "bridge", "--internal",
		"--label", label+"="+theRun.id, "--subnet", nw.Prefix.String(), "--gateway", nw.Addr(1).String(), nw.Name)
	if err != nil {
		t.Fatalf("network %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := docker(context.Background(), nil, "network", "rm", nw.Name); err != nil {
			t.Errorf("network %s: %v", name, err)
		}
	})
	return nw
}

// free fails when an address of this machine is in the subnet: its addresses must be the run's
// containers only.
func (n *Network) free() error {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("network %s: this machine's addresses: %w", n.Name, err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Overlaps(n.Prefix) {
			return fmt.Errorf("network %s: subnet %v overlaps %v, an address of this machine: pick another", n.Name, n.Prefix, p)
		}
	}
	return nil
}

// Addr is the address .host in the network's subnet. .1 is this machine's side of the bridge.
func (n *Network) Addr(host int) netip.Addr {
	b := n.Prefix.Addr().As4()
	b[3] = byte(host)
	return netip.AddrFrom4(b)
}

// Attachment is a host's pinned address on one network.
type Attachment struct {
	Network *Network
	Addr    netip.Addr
}

// HostOptions are the ways a host differs from the plain one.
type HostOptions struct {
	// Also attaches the host to more networks at pinned addresses: a bastion's inner side.
	Also []Attachment
	// SSHDConfig is sshd_config lines read before the image's own (sshd keeps the first value it
	// reads), such as "AllowTcpForwarding no" or "GatewayPorts yes".
	SSHDConfig []string
	// WithoutTmux removes tmux from the host as it starts.
	WithoutTmux bool
	// WithoutGit removes git from the host as it starts.
	WithoutGit bool
	// HomeOnTmpfs puts the homes of krad and other on tmpfs: Restart empties them, as a reboot
	// would on a host that does not keep them (what was installed there and token files are
	// gone; the users' authorized keys are kept elsewhere and stay).
	HomeOnTmpfs bool
	// Arch is the host's processor as Go names it (arm64), when it is not this machine's: its
	// programs run under qemu emulation ([Emulate] skips the test where they cannot).
	Arch string
}

// arch is the host's processor, GOARCH's way.
func (o HostOptions) arch() string {
	if o.Arch != "" {
		return o.Arch
	}
	return runtime.GOARCH
}

// The users of every host, both authorized for the run's key.
var hostUsers = map[string]int{"root": 0, "krad": 1000, "other": 1001}

// Host is an OpenSSH host: a container of the hosts' image at pinned addresses, running sshd as
// its pid 1, with users krad (uid 1000) and other (uid 1001) who both accept the run's key.
type Host struct {
	Name      string     // the name the test gave it, also its hostname
	Container string     // the Docker container's name
	Addr      netip.Addr // its address on the network it was started on
	nets      []Attachment
	opts      HostOptions
	keys      []HostKey
}

// HostKey is one of a host's sshd host keys.
type HostKey struct {
	Type        string // ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa
	Key         string // base64, as in known_hosts
	Fingerprint string // SHA256:…, as ssh prints it
}

// StartHost starts a host on nw at ip, and returns when its sshd listens. Its container is named
// for the run, nw's subnet number and name. It is removed when the test ends; if the test failed,
// sshd's log is logged first.
func StartHost(t testing.TB, name string, nw *Network, ip netip.Addr, opts HostOptions) *Host {
	t.Helper()
	image := HostImageFor(t, opts.arch())
	h := &Host{
		Name:      name,
		Container: fmt.Sprintf("krad-e2e-%s-%d-%s", theRun.id, nw.Prefix.Addr().As4()[2], name),
		Addr:      ip,
		nets:      append([]Attachment{{nw, ip}}, opts.Also...),
		opts:      opts,
	}
	for _, a := range h.nets {
		if !a.Network.Prefix.Contains(a.Addr) || a.Addr == a.Network.Addr(1) {
			t.Fatalf("host %s: %v is not a host address of %v", name, a.Addr, a.Network.Prefix)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if t.Failed() {
			t.Logf("host %s: sshd's log:\n%s", name, h.sshdLog(ctx, 200))
		}
		if _, err := docker(ctx, nil, "rm", "-f", "-v", h.Container); err != nil {
			t.Errorf("host %s: %v", name, err)
		}
	})
	if err := h.create(context.Background(), image); err != nil {
		t.Fatalf("host %s: %v", name, err)
	}
	return h
}

// create makes the container, puts the host's own files in, starts it and waits for sshd.
func (h *Host) create(ctx context.Context, image string) error {
	args := []string{"create", "--pull", "never", "--name", h.Container, "--hostname", h.Name,
		"--label", label + "=" + theRun.id, "--stop-timeout", "3",
		"--network", h.nets[0].Network.Name, "--ip", h.nets[0].Addr.String()}
	if h.opts.Arch != "" {
		args = append(args, "--platform", "linux/"+h.opts.Arch)
	}
	if h.opts.HomeOnTmpfs {
		for _, u := range []string{"krad", "other"} {
			args = append(args, "--tmpfs", fmt.Sprintf("/home/%s:exec,mode=0700,uid=%d,gid=%d", u, hostUsers[u], hostUsers[u]))
		}
	}
	if _, err := docker(ctx, nil, append(args, image)...); err != nil {
		return err
	}
	for _, a := range h.nets[1:] {
		if _, err := docker(ctx, nil, "network", "connect", "--ip", a.Addr.String(), a.Network.Name, h.Container); err != nil {
			return err
		}
	}
	files := []hostFile{
		{"/etc/ssh/authorized_keys/krad", []byte(theRun.identity.PublicKey + "\n"), 0o644, 0},
		{"/etc/ssh/authorized_keys/other", []byte(theRun.identity.PublicKey + "\n"), 0o644, 0},
	}
	if len(h.opts.SSHDConfig) > 0 {
		conf := "# This host's own settings, from the test.\n" + strings.Join(h.opts.SSHDConfig, "\n") + "\n"
		files = append(files, hostFile{"/etc/ssh/sshd_config.d/00-krad-e2e-host.conf", []byte(conf), 0o644, 0})
	}
	if h.opts.WithoutTmux {
		files = append(files, hostFile{"/etc/krad-e2e/without-tmux", nil, 0o644, 0})
	}
	if h.opts.WithoutGit {
		files = append(files, hostFile{"/etc/krad-e2e/without-git", nil, 0o644, 0})
	}
	if err := h.put(ctx, files); err != nil {
		return err
	}
	if _, err := docker(ctx, nil, "start", h.Container); err != nil {
		return err
	}
	return h.waitForSSHD(ctx)
}

// waitForSSHD waits until sshd listens on port 22 in the container, then reads its host keys.
// An emulated host has longer: there sshd and ssh-keygen run under qemu.
func (h *Host) waitForSSHD(ctx context.Context) error {
	wait := 30 * time.Second
	if h.opts.Arch != "" {
		wait = 5 * time.Minute
	}
	deadline := time.Now().Add(wait)
	for {
		// Under qemu-user ss cannot open sock_diag netlink; it says so on stderr and reads /proc.
		out, err := docker(ctx, nil, "exec", h.Container, "ss", "-Hltn", "sport = :22")
		if err == nil && strings.TrimSpace(out) != "" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sshd did not listen within %v (last: %v, %q); the container: %s; its processes:\n%s\nits log:\n%s",
				wait, err, out, h.state(ctx), h.processes(ctx), h.sshdLog(ctx, 50))
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, err := docker(ctx, nil, "exec", h.Container, "sh", "-c", "cat /etc/ssh/ssh_host_*_key.pub")
	if err != nil {
		return fmt.Errorf("host keys: %w", err)
	}
	h.keys = nil
	for _, l := range lines(out) {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		blob, err := base64.StdEncoding.DecodeString(f[1])
		if err != nil {
			return fmt.Errorf("host key %s: %w", f[0], err)
		}
		sum := sha256.Sum256(blob)
		h.keys = append(h.keys, HostKey{f[0], f[1], "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])})
	}
	if len(h.keys) == 0 {
		return fmt.Errorf("no host keys in /etc/ssh")
	}
	return nil
}

// state is the container's state as Docker tells it, for an error: running or not, its exit
// code, when it started.
func (h *Host) state(ctx context.Context) string {
	out, err := docker(ctx, nil, "inspect", "--format",
		"{{.State.Status}}, exit code {{.State.ExitCode}}, started {{.State.StartedAt}}, OOM killed {{.State.OOMKilled}}", h.Container)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return out
}

// processes is the container's process list (docker top), for an error: where its command stands.
func (h *Host) processes(ctx context.Context) string {
	out, err := docker(ctx, nil, "top", h.Container, "-o", "pid,etime,time,stat,args")
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return out
}

// sshdLog is the last lines sshd (the container's command, with -e) wrote to stderr.
func (h *Host) sshdLog(ctx context.Context, lines int) string {
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "logs", "--tail", fmt.Sprint(lines), h.Container).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(docker logs: %v: %s)", err, tail(string(out), 500))
	}
	return string(out)
}

// hostFile is a file put into a container.
type hostFile struct {
	path string
	data []byte
	mode int64
	uid  int
}

// put copies files into the container (running or not) with their modes and owners, through
// docker cp in archive mode. Their folders must exist.
func (h *Host) put(ctx context.Context, files []hostFile) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: strings.TrimPrefix(f.path, "/"), Mode: f.mode, Size: int64(len(f.data)),
			Uid: f.uid, Gid: f.uid, ModTime: time.Now(), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	_, err := docker(ctx, &buf, "cp", "--archive", "-", h.Container+":/")
	return err
}

// Arch is the host's processor as Go names it: amd64, arm64.
func (h *Host) Arch() string { return h.opts.arch() }

// HostKeys are the host's sshd host keys (new ones after Replace).
func (h *Host) HostKeys() []HostKey { return h.keys }

// Fingerprint is the SHA256 fingerprint of the host key of type keyType (ssh-ed25519,
// ecdsa-sha2-nistp256, ssh-rsa), or "" if the host has none.
func (h *Host) Fingerprint(keyType string) string {
	for _, k := range h.keys {
		if k.Type == keyType {
			return k.Fingerprint
		}
	}
	return ""
}

// KnownHosts is the host's known_hosts lines, one per host key, for the name or address addr.
func (h *Host) KnownHosts(addr string) string {
	var b strings.Builder
	for _, k := range h.keys {
		fmt.Fprintf(&b, "%s %s %s\n", addr, k.Type, k.Key)
	}
	return b.String()
}

// AddrOn is the host's pinned address on nw.
func (h *Host) AddrOn(nw *Network) (netip.Addr, bool) {
	for _, a := range h.nets {
		if a.Network == nw {
			return a.Addr, true
		}
	}
	return netip.Addr{}, false
}

// Command is `docker exec` of cmd on the host as user ("" is root), for a test that wants to
// give it stdin, read its exit code or start it in the background.
func (h *Host) Command(ctx context.Context, user string, cmd ...string) *exec.Cmd {
	args := []string{"exec", "-i"}
	if user != "" {
		args = append(args, "--user", user)
	}
	c := exec.CommandContext(ctx, "docker", append(append(args, h.Container), cmd...)...)
	c.WaitDelay = 5 * time.Second
	return c
}

// Exec runs cmd on the host as root and returns its standard output; a failure fails the test.
func (h *Host) Exec(t testing.TB, cmd ...string) string {
	t.Helper()
	return h.ExecAs(t, "root", cmd...)
}

// ExecAs runs cmd on the host as user and returns its standard output; a failure fails the test.
func (h *Host) ExecAs(t testing.TB, user string, cmd ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	c := h.Command(ctx, user, cmd...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("host %s: %q as %s: %v: %s", h.Name, cmd, user, err, tail(stderr.String(), 2000))
	}
	return stdout.String()
}

// Listeners are the local addresses of the TCP listeners on port on the host (ss, as root).
func (h *Host) Listeners(t testing.TB, port string) []string {
	t.Helper()
	var addrs []string
	for _, l := range strings.Split(strings.TrimSpace(h.Exec(t, "ss", "-Hltn", "sport = :"+port)), "\n") {
		if f := strings.Fields(l); len(f) >= 4 {
			addrs = append(addrs, f[3])
		}
	}
	return addrs
}

// WriteFile puts a file on the host with mode and owner (root, krad or other); its folder must
// exist.
func (h *Host) WriteFile(t testing.TB, path string, data []byte, mode os.FileMode, owner string) {
	t.Helper()
	uid, ok := hostUsers[owner]
	if !ok {
		t.Fatalf("host %s: no user %q", h.Name, owner)
	}
	if err := h.put(context.Background(), []hostFile{{path, data, int64(mode.Perm()), uid}}); err != nil {
		t.Fatalf("host %s: write %s: %v", h.Name, path, err)
	}
}

// Disconnect cuts the host off nw: `docker network disconnect`. Its processes keep running.
func (h *Host) Disconnect(t testing.TB, nw *Network) {
	t.Helper()
	if _, err := docker(context.Background(), nil, "network", "disconnect", nw.Name, h.Container); err != nil {
		t.Fatalf("host %s: %v", h.Name, err)
	}
}

// Connect puts the host back on nw at its pinned address there.
func (h *Host) Connect(t testing.TB, nw *Network) {
	t.Helper()
	addr, ok := h.AddrOn(nw)
	if !ok {
		t.Fatalf("host %s: never on network %s", h.Name, nw.Name)
	}
	if _, err := docker(context.Background(), nil, "network", "connect", "--ip", addr.String(), nw.Name, h.Container); err != nil {
		t.Fatalf("host %s: %v", h.Name, err)
	}
}

// Restart is `docker restart`: every process on the host ends and sshd starts again, with the
// same host keys and addresses; files stay unless the homes are on tmpfs. It returns when sshd
// listens again.
func (h *Host) Restart(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	if _, err := docker(ctx, nil, "restart", "--time", "3", h.Container); err != nil {
		t.Fatalf("host %s: %v", h.Name, err)
	}
	if err := h.waitForSSHD(ctx); err != nil {
		t.Fatalf("host %s: %v", h.Name, err)
	}
}

// Replace puts a new container in the host's place: same name, addresses and options, nothing
// of the old one's files, and new host keys. It returns when the new sshd listens.
func (h *Host) Replace(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	if _, err := docker(ctx, nil, "rm", "-f", "-v", h.Container); err != nil {
		t.Fatalf("host %s: %v", h.Name, err)
	}
	if err := h.create(ctx, HostImageFor(t, h.opts.arch())); err != nil {
		t.Fatalf("host %s: %v", h.Name, err)
	}
}

// RunImage runs cmd in a throwaway container of image, with no network at all, and returns its
// standard output; a failure fails the test.
func RunImage(t testing.TB, image string, cmd ...string) string {
	t.Helper()
	args := []string{"run", "--rm", "--pull", "never", "--network", "none", "--label", label + "=" + theRun.id, image}
	out, err := docker(context.Background(), nil, append(args, cmd...)...)
	if err != nil {
		t.Fatalf("%s %q: %v", image, cmd, err)
	}
	return out
}

// ImageFiles lists the regular files of image's filesystem with their sizes, from `docker export`
// of a container created (never started) for it. Docker's own empty placeholders (/etc/hostname,
// /etc/hosts, /etc/resolv.conf, /.dockerenv) are in it.
func ImageFiles(t testing.TB, image string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	id, err := docker(ctx, nil, "create", "--pull", "never", "--network", "none", "--label", label+"="+theRun.id, image)
	if err != nil {
		t.Fatalf("%s: %v", image, err)
	}
	defer docker(ctx, nil, "rm", "-f", id)
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "export", id)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("docker export of %s: %v: %s", image, err, tail(stderr.String(), 1000))
	}
	files := map[string]int64{}
	tr := tar.NewReader(&out)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("docker export of %s: %v", image, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			files["/"+strings.TrimPrefix(hdr.Name, "/")] = hdr.Size
		}
	}
	return files
}
