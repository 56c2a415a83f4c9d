package bridge_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/worktree"
)

// prompter stands in for the UI's modal: it records what it is shown and answers with answer.
type prompter struct {
	shown  chan app.Prompt
	answer func(app.Prompt) string
}

func newPrompter(answer func(app.Prompt) string) *prompter {
	return &prompter{shown: make(chan app.Prompt, 32), answer: answer}
}

func (p *prompter) Ask(ctx context.Context, pr app.Prompt) (api.Secret, error) {
	p.shown <- pr
	return api.NewSecret(p.answer(pr)), nil
}

// spawnShell runs script in a worker on the host, started by the host's lead, and returns the
// worker's screen once it shows want.
func (w *world) spawnShell(script, want string) (api.Agent, string) {
	w.t.Helper()
	var worker api.Agent
	w.call(w.as(1), api.Spawn, &api.SpawnBody{Title: "sh", Command: []string{"sh", "-c", script + "; sleep 600"}}, &worker)
	return worker, w.screen(w.as(1), worker.Terminal, want)
}

// TestAskpassVariablesOnTheHost: the host's terminals get GIT_ASKPASS, and with [git]
// ssh_askpass SSH_ASKPASS with SSH_ASKPASS_REQUIRE=force, both the installed krad-ade-askpass;
// the user's own askpass there stays: GIT_ASKPASS or core.askPass (GIT_CONFIG_GLOBAL naming a
// config that has it, ~/.gitconfig, or a file it includes) keep the app's GIT_ASKPASS out,
// SSH_ASKPASS keeps the app's SSH_ASKPASS out; a ~/.gitconfig without one does not.
func TestAskpassVariablesOnTheHost(t *testing.T) {
	t.Parallel()
	askConfig := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(askConfig, []byte("[core]\n\taskPass = /opt/mine/git-askpass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const ours = "OURS"
	for _, c := range []struct {
		name       string
		env        []string
		sshAskpass bool
		git, ssh   string // what the terminal has: ours, "unset", or the user's
		require    string
		gitconfig  string // the host's ~/.gitconfig, if any
	}{
		{"default", nil, false, ours, "unset", "unset", ""},
		{"ssh_askpass", nil, true, ours, ours, "force", ""},
		{"own GIT_ASKPASS", []string{"GIT_ASKPASS=/opt/mine/askpass"}, true, "/opt/mine/askpass", "unset", "unset", ""},
		{"own core.askPass", []string{"GIT_CONFIG_GLOBAL=" + askConfig}, true, "unset", "unset", "unset", ""},
		{"own SSH_ASKPASS", []string{"SSH_ASKPASS=/opt/mine/ssh-askpass"}, true, ours, "/opt/mine/ssh-askpass", "unset", ""},
		{"gitconfig", nil, false, "unset", "unset", "unset", "[user]\n\tname = someone\n[Core]\n\tASKPASS = /opt/mine/git-askpass\n"},
		{"included", nil, false, "unset", "unset", "unset", "[include]\n\tpath = " + askConfig + "\n"},
		{"gitconfig without", nil, false, ours, "unset", "unset", "[user]\n\tname = someone\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			host := func(w *world) {
				if c.gitconfig != "" {
					if err := os.WriteFile(filepath.Join(w.sshd.Home, ".gitconfig"), []byte(c.gitconfig), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			w := startWorld(t, worldOptions{hostEnv: c.env, sshAskpass: c.sshAskpass, host: host})
			_, screen := w.spawnShell(`echo "G=[${GIT_ASKPASS-unset}] S=[${SSH_ASKPASS-unset}] R=[${SSH_ASKPASS_REQUIRE-unset}] END"`, "END")
			mine := w.bridge.Vars().BinDir + "/krad-ade-askpass"
			of := func(s string) string {
				if s == ours {
					return mine
				}
				return s
			}
			want := fmt.Sprintf("G=[%s] S=[%s] R=[%s] END", of(c.git), of(c.ssh), c.require)
			if !strings.Contains(screen, want) {
				t.Errorf("the host's terminal lacks %q:\n%s", want, screen)
			}
		})
	}
}

const passphrase = "host-Key-Passphrase-8d1"

// encryptedKey writes an ed25519 key encrypted with passphrase, and its .pub, in a new folder.
func encryptedKey(t *testing.T) string {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "host-key", []byte(passphrase))
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "id_encrypted")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key+".pub", ssh.MarshalAuthorizedKey(sp), 0o644); err != nil {
		t.Fatal(err)
	}
	return key
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestGitPushFromTheHostAskpassSSH: git push over SSH in a terminal on the host, with a key
// encrypted and no agent there, asks the key's passphrase through the host's krad-ade-askpass
// (ssh_askpass): it reaches the app's Prompter through the forward, as the Git caller of build,
// naming the terminal and the host; the answer pushes.
func TestGitPushFromTheHostAskpassSSH(t *testing.T) {
	t.Parallel()
	key := encryptedKey(t)
	var repo string
	w := startWorld(t, worldOptions{sshAskpass: true, authorizedKeys: []string{key + ".pub"}, dir: "~/src/proj",
		host: func(w *world) { repo = hostRepo(t, w.sshd.Home) }})
	p := newPrompter(func(app.Prompt) string { return passphrase })
	w.app.SetPrompter(p)
	bare := filepath.Join(t.TempDir(), "r.git")
	git(t, filepath.Dir(bare), "init", "-q", "--bare", bare)
	url := "ssh://" + w.sshd.User + "@127.0.0.1:" + strconv.Itoa(w.sshd.Port) + bare
	sshCommand := "ssh -F /dev/null -i " + key + " -o IdentitiesOnly=yes -o IdentityAgent=none -o UserKnownHostsFile=" + w.sshd.KnownHosts + " -o StrictHostKeyChecking=yes"
	worker, screen := w.spawnShell("unset SSH_AUTH_SOCK DISPLAY; cd "+repo+" && GIT_SSH_COMMAND='"+sshCommand+"' git push -q "+url+" HEAD:main; echo PU\"\"SH=$?", "PUSH=")
	if !strings.Contains(screen, "PUSH=0") {
		t.Fatalf("git push over SSH from the host:\n%s", screen)
	}
	if got, want := git(t, bare, "rev-parse", "main"), git(t, repo, "rev-parse", "HEAD"); got != want {
		t.Errorf("the server's main is %s, not the pushed %s", got, want)
	}
	select {
	case pr := <-p.shown:
		if pr.Environment != "build" || pr.Terminal != worker.Terminal || pr.Host != "buildbox" || pr.Kind != api.AskPassphrase || pr.Text != "Enter passphrase for key '"+key+"': " {
			t.Errorf("the Prompter was shown %+v", pr)
		}
	default:
		t.Error("the push raised no prompt")
	}
	if strings.Contains(screen, passphrase) {
		t.Error("the passphrase is on the host's screen")
	}
}

// TestAppsOwnGitOnTheHost: a git the app runs on the host itself (git worktree add, for a group
// of build) whose filter needs a credential asks through the host's krad-ade-askpass as the Git
// caller of build, terminal 0, on host buildbox; the answers reach the filter and the group is
// made there.
func TestAppsOwnGitOnTheHost(t *testing.T) {
	t.Parallel()
	var repo, got string
	w := startWorld(t, worldOptions{dir: "~/src/proj", host: func(w *world) {
		repo = hostRepo(t, w.sshd.Home)
		got = filepath.Join(t.TempDir(), "got")
		filter := filepath.Join(t.TempDir(), "smudge")
		script := "#!/bin/sh\nprintf 'protocol=https\\nhost=lfs.example.com\\n\\n' | git credential fill > " + got + " || exit 1\nexec cat\n"
		if err := os.WriteFile(filter, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		git(t, repo, "config", "filter.creds.smudge", filter)
		git(t, repo, "config", "filter.creds.clean", "cat")
		git(t, repo, "config", "filter.creds.required", "true")
		if err := os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("*.dat filter=creds\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "big.dat"), []byte("data\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, repo, "add", ".")
		git(t, repo, "commit", "-q", "-m", "data behind a filter")
	}})
	p := newPrompter(func(pr app.Prompt) string {
		if pr.Kind == api.AskUsername {
			return "me"
		}
		return passphrase
	})
	w.app.SetPrompter(p)
	var g worktree.Group
	w.call(w.as(1), api.CreateWorktree, &api.CreateWorktreeBody{Name: "asks"}, &g)
	if b, _ := os.ReadFile(got); !strings.Contains(string(b), "username=me\npassword="+passphrase+"\n") {
		t.Errorf("the filter on the host got %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(g.Dir, "big.dat")); err != nil || string(b) != "data\n" {
		t.Errorf("the group's big.dat on the host: %q, %v", b, err)
	}
	for range 2 {
		select {
		case pr := <-p.shown:
			if pr.Environment != "build" || pr.Terminal != 0 || pr.Host != "buildbox" {
				t.Errorf("the Prompter was shown %+v, want the app's own git of build on buildbox", pr)
			}
		case <-time.After(time.Second):
			t.Fatal("the group's checkout asked fewer than 2 prompts")
		}
	}
}

// TestCodeOnTheHost: Code of a file of the host's environment folder runs ssh_command with
// {host}, {file} and {line} filled as data (a name with spaces and $(…) is one argument, and runs
// nothing); the path is resolved on the host, so a symlink out of the folder, or a .. out of
// it, is forbidden and opens nothing.
func TestCodeOnTheHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script, log := filepath.Join(dir, "editor"), filepath.Join(dir, "opened")
	body := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + log + ".tmp && mv " + log + ".tmp " + log + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	var repo string
	w := startWorld(t, worldOptions{dir: "~/src/proj", editor: app.Editor{SSHCommand: []string{script, "--remote", "ssh-remote+{host}", "{file}:{line}"}},
		host: func(w *world) {
			repo = hostRepo(t, w.sshd.Home)
			if err := os.Symlink(outside, filepath.Join(repo, "proj", "out")); err != nil {
				t.Fatal(err)
			}
		}})
	folder := filepath.Join(repo, "proj")
	mark := "pwned-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	odd := filepath.Join(folder, "a b $(touch "+mark+").txt")
	line := 7
	for _, f := range []string{filepath.Join(folder, "readme"), odd} {
		w.call(w.as(1), api.Code, &api.CodeBody{Path: f, Line: &line}, nil)
		deadline := time.Now().Add(20 * time.Second)
		var b []byte
		for time.Now().Before(deadline) {
			if b, _ = os.ReadFile(log); b != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if want := "--remote\nssh-remote+buildbox\n" + f + ":7\n"; string(b) != want {
			t.Errorf("the editor was run with %q, want %q", b, want)
		}
		os.Remove(log)
	}
	for _, d := range []string{os.TempDir(), w.sshd.Home, folder, dir} {
		if _, err := os.Stat(filepath.Join(d, mark)); err == nil {
			t.Errorf("a file name ran a command: %s", filepath.Join(d, mark))
		}
	}
	for _, f := range []string{filepath.Join(folder, "out", "secret"), folder + "/../../elsewhere", "/etc/passwd"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := w.as(1).Call(ctx, api.NewRequest(api.Code, &api.CodeBody{Path: f}))
		cancel()
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeForbidden {
			t.Errorf("Code of %s on the host: %v, want forbidden", f, err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(log); err == nil {
		t.Error("the editor was run for a refused path")
	}
}
