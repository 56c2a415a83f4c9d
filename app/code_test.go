package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/worktree"
)

// recordingEditor writes an editor script that records its arguments, one per line, in log, and
// with wait set stays until the file done exists. It is the user's editor, as config.toml names it.
func recordingEditor(t *testing.T) (script, log, done string) {
	dir := t.TempDir()
	script, log, done = filepath.Join(dir, "editor"), filepath.Join(dir, "opened"), filepath.Join(dir, "done")
	body := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + log + ".tmp && mv " + log + ".tmp " + log + "\n" +
		"while [ ! -e " + done + " ]; do sleep 0.05; done\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, log, done
}

func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			return string(b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s was not written in 20 s", path)
	return ""
}

// TestCode: Code opens a file of the environment's folder in the configured editor, at its line,
// with the placeholders filled and nothing else; wait returns once the editor exits; a path out of
// the folder, by .. or a symlink, is forbidden and opens nothing; no editor is unavailable with
// the line to add.
func TestCode(t *testing.T) {
	t.Parallel()
	repo, _, withRepo := withRepo(t)
	script, log, done := recordingEditor(t)
	h := start(t, withRepo, func(c *app.Config) {
		c.Editor = app.Editor{Command: []string{script, "--goto", "{file}:{line}", "{host}"}}
	}, withTerminals(app.TerminalSpec{Title: "sh"}))
	c := h.as(1)
	file := filepath.Join(repo, "retry.go")
	line := 42

	// Without wait: Ok once the editor started, which then records what it opened.
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.call(c, api.Code, &api.CodeBody{Path: file, Line: &line}); err != nil {
		t.Fatalf("Code: %v", err)
	}
	real, _ := filepath.EvalSymlinks(file)
	if got, want := waitFile(t, log), "--goto\n"+real+":42\n\n"; got != want {
		t.Errorf("the editor was asked to open %q, want %q", got, want)
	}
	os.Remove(log)
	os.Remove(done)

	// With wait: no answer until the editor exits.
	answered := make(chan error, 1)
	go func() { _, err := h.call(c, api.Code, &api.CodeBody{Path: file, Wait: true}); answered <- err }()
	if got := waitFile(t, log); !strings.Contains(got, real+":1\n") {
		t.Errorf("without a line the editor got %q, want line 1", got)
	}
	select {
	case err := <-answered:
		t.Fatalf("Code with wait answered %v while the editor was still open", err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-answered; err != nil {
		t.Fatalf("Code with wait: %v", err)
	}
	os.Remove(log)

	// Outside the folder: forbidden, and nothing opened.
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	_ = os.WriteFile(secret, []byte("x"), 0o644)
	link := filepath.Join(repo, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	up, _ := filepath.Rel(repo, secret)
	for _, p := range []string{secret, repo + "/" + up, repo + "/../nowhere/x", filepath.Join(link, "secret.txt"), "/etc/passwd"} {
		if _, err := h.call(c, api.Code, &api.CodeBody{Path: p}); code(err) != api.CodeForbidden {
			t.Errorf("Code %s: %v, want forbidden", p, err)
		}
	}
	// A Client may not.
	if _, err := h.call(h.as(0), api.Code, &api.CodeBody{Path: file}); code(err) != api.CodeForbidden {
		t.Errorf("Code as a Client: %v, want forbidden", err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(log); err == nil {
		t.Errorf("the editor was started for a refused path: %s", waitFile(t, log))
	}
}

// TestCodeWithoutEditor: no [editor] is unavailable, with the config line to add.
func TestCodeWithoutEditor(t *testing.T) {
	t.Parallel()
	repo, _, withRepo := withRepo(t)
	h := start(t, withRepo, withTerminals(app.TerminalSpec{Title: "sh"}))
	_, err := h.call(h.as(1), api.Code, &api.CodeBody{Path: filepath.Join(repo, "retry.go")})
	if code(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "[editor] command = [") {
		t.Errorf("Code with no editor: %v, want unavailable with the line to add", err)
	}
}

// TestCodeInGroups: a worker's Code may open files of its own group's checkout, not those of
// another group's; the lead, in the main checkout, may not open a group's either.
func TestCodeInGroups(t *testing.T) {
	t.Parallel()
	_, _, withRepo := withRepo(t)
	script, log, done := recordingEditor(t)
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := start(t, withRepo, lead(), func(c *app.Config) {
		c.Editor = app.Editor{Command: []string{script, "{file}:{line}"}}
	})
	c := h.as(1)
	dirs := map[string]string{}
	workers := map[string]int{}
	for _, g := range []string{"one", "two"} {
		w := h.agent(c, api.Spawn, &api.SpawnBody{Title: g, Group: g, Command: []string{"sleep", "600"}})
		workers[g] = w.Terminal
		var list worktree.List
		if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &list); err != nil {
			t.Fatal(err)
		}
		for _, gr := range list.Groups {
			if gr.Name == g {
				dirs[g] = gr.Dir
			}
		}
	}
	one, two := filepath.Join(dirs["one"], "retry.go"), filepath.Join(dirs["two"], "retry.go")
	if _, err := h.call(h.as(workers["one"]), api.Code, &api.CodeBody{Path: one}); err != nil {
		t.Fatalf("Code of a file of the worker's own group: %v", err)
	}
	real, _ := filepath.EvalSymlinks(one)
	if got := waitFile(t, log); got != real+":1\n" {
		t.Errorf("the editor was asked to open %q, want %s:1", got, real)
	}
	os.Remove(log)
	for _, c := range []struct {
		who  int
		path string
	}{{workers["one"], two}, {1, one}} {
		if _, err := h.call(h.as(c.who), api.Code, &api.CodeBody{Path: c.path}); code(err) != api.CodeForbidden {
			t.Errorf("Code of %s by main:%d: %v, want forbidden", c.path, c.who, err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(log); err == nil {
		t.Errorf("the editor was started for a refused path: %s", waitFile(t, log))
	}
}

// TestKradCodeWaitInATerminal: `krad code retry.go:3 --wait`, typed into a terminal, opens the
// file of the terminal's folder at line 3 in the editor and returns, 0, only once the editor
// exits.
func TestKradCodeWaitInATerminal(t *testing.T) {
	t.Parallel()
	repo, _, withRepo := withRepo(t)
	script, log, done := recordingEditor(t)
	h := start(t, withRepo, withTerminals(app.TerminalSpec{Title: "sh"}), func(c *app.Config) {
		c.Editor = app.Editor{Command: []string{script, "--goto", "{file}:{line}"}}
	})
	h.typeIn(1, "cd "+repo+" && krad code retry.go:3 --wait; echo CO\"\"DE=$?")
	real, _ := filepath.EvalSymlinks(filepath.Join(repo, "retry.go"))
	if got := waitFile(t, log); got != "--goto\n"+real+":3\n" {
		t.Errorf("the editor was asked to open %q, want --goto %s:3", got, real)
	}
	time.Sleep(500 * time.Millisecond)
	if s := h.read(h.as(1), 1); strings.Contains(s, "CODE=") {
		t.Fatalf("krad code --wait returned while the editor was open:\n%s", s)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s := h.waitScreen(h.as(1), 1, "CODE="); exitIn(s, "CODE") != "0" {
		t.Errorf("krad code --wait after the editor exited:\n%s", s)
	}
}

// TestEditorHintDarwin: on macOS the hint names the way to VS Code's code command, which a Mac
// does not have until VS Code installs it, and open -t, which every Mac has; on Linux it is the
// code line alone.
func TestEditorHintDarwin(t *testing.T) {
	mac := app.EditorHint("darwin")
	for _, want := range []string{`command = ["code", "--wait", "--goto", "{file}:{line}"]`, "Install 'code' command in PATH", `["open", "-t", "{file}"]`} {
		if !strings.Contains(mac, want) {
			t.Errorf("the macOS hint %q lacks %q", mac, want)
		}
	}
	if linux := app.EditorHint("linux"); strings.Contains(linux, "open") || !strings.Contains(linux, `command = ["code"`) {
		t.Errorf("the Linux hint: %q", linux)
	}
}
