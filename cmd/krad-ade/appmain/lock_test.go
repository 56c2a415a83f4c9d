package appmain

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/krad-ade/krad/app"
)

// TestLockBesideTheSocket: the tmux server's lock goes beside the socket of the server the app
// drives, however its TmuxConfig names it: by the default name, by another name, or by path.
func TestLockBesideTheSocket(t *testing.T) {
	tmp := t.TempDir()
	env := []string{"TMUX_TMPDIR=" + tmp}
	folder := filepath.Join(tmp, fmt.Sprintf("tmux-%d", os.Getuid()))
	for _, tt := range []struct {
		name string
		tmux app.TmuxConfig
		lock string
	}{
		{"default", app.TmuxConfig{Env: env}, filepath.Join(folder, app.SocketName+"-app.lock")},
		{"socket name", app.TmuxConfig{Env: env, SocketName: "other"}, filepath.Join(folder, "other-app.lock")},
		{"socket path", app.TmuxConfig{Env: env, SocketPath: filepath.Join(tmp, "s")}, filepath.Join(tmp, "s-app.lock")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			locks, msg, hint := lockInstance(t.TempDir(), tt.tmux)
			if locks == nil {
				t.Fatalf("lockInstance: %s (%s)", msg, hint)
			}
			defer locks.release()
			b, err := os.ReadFile(tt.lock)
			if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
				t.Errorf("the lock beside the server's socket: %q, %v; want our pid in %s", b, err, tt.lock)
			}
		})
	}
}
