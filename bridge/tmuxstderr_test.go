package bridge_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/roguetmux"
	"github.com/krad-ade/krad/tmux"
)

// TestHostTmuxStderrIsCut: a host's tmux that writes 1 MB of escapes to stderr and exits at once,
// every time the app tries, makes a short warning each time: what it wrote is escaped and cut to
// tmux.MaxErrorText bytes, as the README says of text from tmux, not the 4 KiB the bridge keeps of
// it, quoted (four times longer for escapes).
func TestHostTmuxStderrIsCut(t *testing.T) {
	t.Parallel()
	rt := roguetmux.Write(t, t.TempDir(), roguetmux.Options{Stderr: "no " + strings.Repeat("\x1b[2J\x07", 210000)})
	var log apptest.Buffer
	startWorld(t, worldOptions{
		hostEnv: []string{"PATH=" + rt.Bin + ":/usr/local/bin:/usr/bin:/bin"},
		log:     slog.New(slog.NewTextHandler(&log, nil)),
		noWait:  true,
	})
	down := func() []string {
		var lines []string
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.Contains(l, `msg="environment down" environment=build`) {
				lines = append(lines, l)
			}
		}
		return lines
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(down()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the environment was not tried 3 times in 60 s:\n%.2000s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, l := range down()[:3] {
		// The log's text handler quotes the error again: each escape's backslash doubles.
		if !strings.Contains(l, `tmux on the host ended at once: `) || !strings.Contains(l, `: \"no \\x1b[2J\\a`) {
			t.Errorf("the warning does not quote what tmux wrote: %.300s", l)
		}
		if n := strings.Count(l, `[2J`); 5*n > tmux.MaxErrorText {
			t.Errorf("the warning holds %d of tmux's escapes (%d bytes of them), want at most %d bytes: %.300s…", n, 5*n, tmux.MaxErrorText, l)
		}
		if !strings.Contains(l, `\"…`) {
			t.Errorf("the warning does not mark the cut: …%s", l[max(0, len(l)-300):])
		}
	}
}
