package appmain

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// TestPrintSSHConfig runs krad-ade --ssh-config NAME on an environment whose host has Host and
// Match blocks, and holds what it prints against ssh -G for the same host: every line it prints
// for a keyword whose value ssh -G writes the same way must be ssh's own line.
func TestPrintSSHConfig(t *testing.T) {
	ssh := testbin.Need(t, "ssh", "openssh-client")
	home := t.TempDir()
	t.Setenv("HOME", home)
	sshDir := filepath.Join(home, ".ssh")
	if err := os.Mkdir(sshDir, 0o700); err != nil {
		t.Fatal(err)
	}
	userConfig := filepath.Join(sshDir, "config")
	// Every keyword compared is set at the end, so that /etc/ssh/ssh_config, which the app reads
	// and ssh -F does not, cannot tell them apart.
	writeFile(t, userConfig, `
Host buildbox
  HostName Build.Example.COM
  Port 2222
Match host build.example.com user deploy
  IdentityFile `+home+`/keys/deploy
  ServerAliveInterval 0
Match originalhost buildbox
  HostKeyAlias build-key
Host *
  User nobody-wins
  IdentitiesOnly yes
  HashKnownHosts no
  StrictHostKeyChecking accept-new
  ServerAliveInterval 20
  ServerAliveCountMax 4
  UserKnownHostsFile "`+home+`/kh one" `+home+`/kh2
  GlobalKnownHostsFile /etc/ssh/ssh_known_hosts
  IdentityAgent none
  ProxyCommand nc -X connect -x proxy.example:3128 build.example.com 2222
`)
	configDir := filepath.Join(t.TempDir(), "krad-ade")
	if err := os.Mkdir(configDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(configDir, "config.toml"), "[[environment]]\nname = \"build\"\nssh = \"deploy@buildbox\"\ndir = \"~\"\n")

	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return map[string]string{"HOME": home}[k] }
	if code := Run(context.Background(), []string{"--config-dir", configDir, "--ssh-config", "build"}, getenv, &stdout, &stderr); code != exitOK {
		t.Fatalf("krad-ade --ssh-config build = %d: %s", code, stderr.String())
	}
	got := stdout.String()
	t.Logf("krad-ade --ssh-config build:\n%s", got)

	cmd := exec.Command(ssh, "-G", "-F", userConfig, "deploy@buildbox")
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ssh -G: %v", err)
	}
	sshLines := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		sshLines[l] = true
	}
	compared := 0
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		key, _, _ := strings.Cut(l, " ")
		switch key {
		case "connecttimeout": // the app's own default: ssh says none
			continue
		}
		compared++
		if !sshLines[l] {
			t.Errorf("krad-ade --ssh-config printed %q, which ssh -G does not", l)
		}
	}
	for _, want := range []string{"hostname build.example.com", "port 2222", "user deploy", "identityfile " + home + "/keys/deploy", "serveraliveinterval 0", "hostkeyalias build-key"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("krad-ade --ssh-config printed no %q:\n%s", want, got)
		}
	}
	if compared < 15 {
		t.Errorf("only %d lines compared:\n%s", compared, got)
	}

	// An environment that is not there is named, with those that are.
	stdout.Reset()
	stderr.Reset()
	if code := Run(context.Background(), []string{"--config-dir", configDir, "--ssh-config", "nosuch"}, getenv, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), `no SSH environment nosuch`) || !strings.Contains(stderr.String(), "environments of config.toml: build") {
		t.Errorf("krad-ade --ssh-config nosuch = %d: %s", code, stderr.String())
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
