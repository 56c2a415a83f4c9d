package bridge_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/extension"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// TestExtensionFromAHost: a terminal on the SSH host calls an extension lent to its environment,
// through the tunnel: the SDK's everything server runs on this computer, a child of the app, and
// answers; an extension lent to main only is forbidden to the host, and never starts.
func TestExtensionFromAHost(t *testing.T) {
	everything := testbin.Everything(t)
	mainOnly := filepath.Join(t.TempDir(), "started")
	w := startWorld(t, worldOptions{extensions: []extension.Spec{
		{Name: "everything", Command: []string{everything}, Environments: []string{"build"}},
		{Name: "mainonly", Command: []string{"sh", "-c", "touch " + mainOnly + "; exec " + everything}},
	}})
	out := filepath.Join(t.TempDir(), "out")
	var worker api.Agent
	w.call(w.as(1), api.Spawn, &api.SpawnBody{Title: "tool", Command: []string{"sh", "-c", `exec >` + out + ` 2>&1
krad tool everything greet --arg name='from the host'; echo "greet=$?"
krad tool mainonly; echo "mainonly=$?"
echo END; sleep 120`}}, &worker)
	var text string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(out)
		if text = string(b); strings.Contains(text, "END") {
			break
		}
	}
	for _, want := range []string{
		"Hi from the host\ngreet=0",
		"krad: error: ExtensionTool: the app answered forbidden: extension mainonly is not lent to environment build",
		"mainonly=3",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the host terminal's output lacks %q:\n%s", want, text)
		}
	}
	if _, err := os.Stat(mainOnly); err == nil {
		t.Error("the extension lent to main only was started for the host")
	}
	// The server runs here, started by the app (this test's process), not on the host.
	var parents []int
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(b), everything+"\x00") {
			stat, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "stat"))
			fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			ppid, _ := strconv.Atoi(fields[1])
			parents = append(parents, ppid)
		}
	}
	if len(parents) != 1 || parents[0] != os.Getpid() {
		t.Errorf("the everything server's parents: %v, want one, the app's process %d", parents, os.Getpid())
	}
}
