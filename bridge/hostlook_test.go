package bridge

import (
	"strings"
	"testing"
)

// TestReadHostLook: hostScript's lines are read by their place in its krad_say, and a count
// other than the script's is an error that names the step.
func TestReadHostLook(t *testing.T) {
	lines := []string{"/home/u", "/usr/bin:/bin", "/usr/bin/tmux", "/home/u/.krad-ade/tmux/krad-ade", "legacy",
		"boot host 42 /home/u/.krad-ade/tmux", " own ssh", "groups"}
	got, err := readHostLook(lines)
	want := hostLook{home: "/home/u", path: "/usr/bin:/bin", tmux: "/usr/bin/tmux", socket: "/home/u/.krad-ade/tmux/krad-ade",
		legacy: true, server: "boot host 42 /home/u/.krad-ade/tmux", ownAskpass: true, ownSSHAskpass: true, groups: true}
	if err != nil || got != want {
		t.Errorf("readHostLook = %+v, %v\nwant %+v", got, err, want)
	}

	got, err = readHostLook([]string{"/home/u", "/bin", "", "/s", "", "id", "", ""})
	want = hostLook{home: "/home/u", path: "/bin", socket: "/s", server: "id"}
	if err != nil || got != want {
		t.Errorf("readHostLook of a host without tmux, askpass or groups = %+v, %v\nwant %+v", got, err, want)
	}

	if _, err := readHostLook(lines[:7]); err == nil || !strings.HasPrefix(err.Error(), "look at the host: 7 lines, want 8") {
		t.Errorf("readHostLook of 7 lines = %v, want an error that says so", err)
	}
}
