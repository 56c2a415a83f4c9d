package bridge_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/krad-ade/krad/bridge"
	"github.com/krad-ade/krad/forward"
)

// TestAttachHintQuotesTheHost: the attach hint is a command line a person pastes into their shell.
// Whatever the configured host (a user name may hold a quote or a ';'), ssh gets it as one word,
// then the remote command as one word, and the shell runs nothing else.
func TestAttachHintQuotesTheHost(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"buildbox", "u@buildbox:2222", "o'brien;touch ran@buildbox", "$(touch ran)@buildbox"} {
		hint := bridge.New(bridge.Config{Name: "build", Forward: forward.Config{Host: host}}).AttachHint("build")
		dir := t.TempDir()
		// ssh, in the shell that runs the hint, prints the words it was given.
		cmd := exec.Command("sh", "-c", `ssh() { printf '%s\n' "$@"; }; `+hint)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		want := "-t\n" + host + "\ntmux -S ~/.krad-ade/tmux/krad-ade attach -t build\n"
		if err != nil || string(out) != want {
			t.Errorf("the hint %s gives ssh the words %q (%v), want %q", hint, out, err, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
			t.Errorf("the hint %s ran a command of the host's name", hint)
		}
	}
}

// TestAttachHintOnAWindow: the UI's Enter attaches to one terminal's window with the same hint,
// given "E:N" for the session: ssh's remote command then names that window.
func TestAttachHintOnAWindow(t *testing.T) {
	t.Parallel()
	hint := bridge.New(bridge.Config{Name: "build", Forward: forward.Config{Host: "buildbox"}}).AttachHint("build:3")
	out, err := exec.Command("sh", "-c", `ssh() { printf '%s\n' "$@"; }; `+hint).CombinedOutput()
	if want := "-t\nbuildbox\ntmux -S ~/.krad-ade/tmux/krad-ade attach -t build:3\n"; err != nil || string(out) != want {
		t.Errorf("the hint %s gives ssh the words %q (%v), want %q", hint, out, err, want)
	}
}
