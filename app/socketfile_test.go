package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSocketFile: the socket of the server a TmuxConfig reaches, as tmux finds it: by path, or by
// name in tmux's folder under $TMUX_TMPDIR from Env, made owner-only when missing; a folder open
// to others is refused, as tmux refuses it.
func TestSocketFile(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	env := []string{"PATH=/usr/bin", "TMUX_TMPDIR=" + tmp}
	folder := filepath.Join(tmp, fmt.Sprintf("tmux-%d", os.Getuid()))
	for _, tt := range []struct {
		tc   TmuxConfig
		want string
	}{
		{TmuxConfig{Env: env}, filepath.Join(folder, "krad-ade")},
		{TmuxConfig{Env: env, SocketName: "other"}, filepath.Join(folder, "other")},
		{TmuxConfig{Env: env, SocketName: "other", SocketPath: "/run/x/s"}, "/run/x/s"},
	} {
		if got, err := tt.tc.SocketFile(); got != tt.want || err != nil {
			t.Errorf("SocketFile of %+v = %q, %v; want %q", tt.tc, got, err, tt.want)
		}
	}
	if fi, err := os.Stat(folder); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("tmux's folder: %v, %v; want it made, mode 0700", fi, err)
	}
	if err := os.Chmod(folder, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := (TmuxConfig{Env: env}).SocketFile(); err == nil || !strings.Contains(err.Error(), "open to every user") {
		t.Errorf("SocketFile with tmux's folder open to all: %v, want it refused", err)
	}
}
