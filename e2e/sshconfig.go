//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// SSHEntry is one Host block of a test's ssh_config.
type SSHEntry struct {
	Alias     string   // the name ssh is given
	Host      *Host    // the host it reaches
	Network   *Network // the network whose address is its HostName; nil: the host's first
	User      string   // krad when empty
	ProxyJump string   // another entry's Alias, for a host behind a bastion
	Options   []string // more lines for the block, such as "ServerAliveInterval 2"
}

// SSHConfig is an ssh_config and its known_hosts, written for a test.
type SSHConfig struct {
	Path       string // the ssh_config
	KnownHosts string // the known_hosts it names: every entry's host keys at its HostName
}

// WriteSSHConfig writes into dir an ssh_config with a Host block per entry, and a known_hosts with
// the host keys each host has now. Each block pins everything ssh would otherwise take from this
// machine: the run's key only, that known_hosts only with StrictHostKeyChecking yes, no prompts.
func WriteSSHConfig(t testing.TB, dir string, entries ...SSHEntry) *SSHConfig {
	t.Helper()
	c := &SSHConfig{Path: filepath.Join(dir, "ssh_config"), KnownHosts: filepath.Join(dir, "known_hosts")}
	var conf, known strings.Builder
	for _, e := range entries {
		nw := e.Network
		if nw == nil {
			nw = e.Host.nets[0].Network
		}
		addr, ok := e.Host.AddrOn(nw)
		if !ok {
			t.Fatalf("ssh_config %s: host %s is not on network %s", e.Alias, e.Host.Name, nw.Name)
		}
		user := e.User
		if user == "" {
			user = "krad"
		}
		fmt.Fprintf(&conf, "Host %s\n", e.Alias)
		fmt.Fprintf(&conf, "  HostName %s\n  User %s\n", addr, user)
		fmt.Fprintf(&conf, "  IdentityFile %s\n  IdentitiesOnly yes\n", theRun.identity.PrivateKey)
		fmt.Fprintf(&conf, "  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n", c.KnownHosts)
		conf.WriteString("  StrictHostKeyChecking yes\n  UpdateHostKeys no\n  BatchMode yes\n")
		conf.WriteString("  ConnectTimeout 10\n  ControlMaster no\n  ControlPath none\n  LogLevel ERROR\n")
		if e.ProxyJump != "" {
			fmt.Fprintf(&conf, "  ProxyJump %s\n", e.ProxyJump)
		}
		for _, o := range e.Options {
			fmt.Fprintf(&conf, "  %s\n", o)
		}
		known.WriteString(e.Host.KnownHosts(addr.String()))
	}
	if err := os.WriteFile(c.Path, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.KnownHosts, []byte(known.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// Command is OpenSSH's ssh with this config, `ssh -F PATH args…`: args hold an entry's alias, and
// options and a command as ssh takes them. The agent of this machine is left out, so the run's key
// is the only one offered.
func (c *SSHConfig) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ssh", append([]string{"-F", c.Path}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SSH_AUTH_SOCK=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}
