package app_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
)

// tmuxOut runs the tmux command line on the harness's server, as a person would, and returns its
// output.
func (h *harness) tmuxOut(args ...string) string {
	h.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", h.socket}, args...)...).CombinedOutput()
	if err != nil {
		h.t.Fatalf("tmux %q: %v: %s", args, err, out)
	}
	return string(out)
}

// windowNames is each terminal's window name, by its @krad_terminal.
func (h *harness) windowNames() map[string]string {
	h.t.Helper()
	// The name goes last: the @krad_terminal of the app's windows holds no '|'.
	names := map[string]string{}
	for _, line := range strings.Split(h.tmuxOut("list-windows", "-t", "main", "-F", "#{@krad_terminal}|#{window_name}"), "\n") {
		if id, name, ok := strings.Cut(line, "|"); ok {
			names[id] = name
		}
	}
	return names
}

// TestTitlesAndFoldersAreText: titles and folders that hold tmux formats reach tmux as text, for
// configured terminals and spawned workers: #(…) runs nothing, #{KRAD_ADE_TOKEN} does not put the
// token in a window's name, and each window is named exactly its title.
func TestTitlesAndFoldersAreText(t *testing.T) {
	tmp := t.TempDir()
	ran := filepath.Join(tmp, "ran")
	dir := filepath.Join(tmp, "d #{pid} #(echo x) ##[x] #S")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	leadTitle := "lead #(touch " + ran + "-config) #{pid}"
	h := start(t, withTerminals(app.TerminalSpec{Title: leadTitle, Lead: true, Dir: dir, Command: "pwd; exec sh"}))
	c := h.as(1)
	titles := []string{
		"fix #(touch " + ran + "-spawn) bug",
		"#{KRAD_ADE_TOKEN}",
		"#{E:KRAD_ADE_TOKEN} #W #S ## ###[x] %H",
	}
	want := map[string]string{"main:1": leadTitle}
	for _, title := range titles {
		w := h.agent(c, api.Spawn, &api.SpawnBody{Title: title, Command: []string{"sleep", "60"}})
		if w.Title != title {
			t.Errorf("Spawn answered the title %q, want %q", w.Title, title)
		}
		want[api.TerminalID{Environment: "main", Terminal: w.Terminal}.String()] = title
	}
	names := h.windowNames()
	for id, title := range want {
		if names[id] != title {
			t.Errorf("%s's window is named %q, want its title %q", id, names[id], title)
		}
	}
	for id, name := range names {
		if strings.Contains(name, h.token.Reveal()) {
			t.Errorf("%s's window name holds the bus token", id)
		}
	}
	time.Sleep(300 * time.Millisecond) // format jobs run in the background
	checkNothingRan(t, ran+"-config", ran+"-spawn")
	h.waitScreen(c, 1, dir) // the lead's pwd: the folder as it was named
}

// checkNothingRan fails the test if any of the files exists: a #(touch FILE) ran.
func checkNothingRan(t *testing.T, files ...string) {
	t.Helper()
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("a title's #(touch %s) ran", f)
		}
	}
}
