package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

func TestOpen(t *testing.T) {
	dir := newRepo(t)
	r := open(t, dir)
	real, _ := filepath.EvalSymlinks(dir)
	if r.Top != dir && r.Top != real {
		t.Errorf("Top = %q, want %q", r.Top, dir)
	}
	if want := filepath.Join(filepath.Dir(r.Top), "app", ".git"); r.CommonDir != want {
		t.Errorf("CommonDir = %q, want %q", r.CommonDir, want)
	}
	if !regexp.MustCompile(`^app-[0-9a-f]{8}$`).MatchString(r.Key) {
		t.Errorf("Key = %q, want app-<8 hex>", r.Key)
	}
	// From a subfolder: the same repository.
	write(t, dir, "sub/x", "x")
	if r2 := open(t, filepath.Join(dir, "sub")); r2.Top != r.Top || r2.CommonDir != r.CommonDir || r2.Key != r.Key {
		t.Errorf("Open(sub) = %s %s %s, want %s %s %s", r2.Top, r2.CommonDir, r2.Key, r.Top, r.CommonDir, r.Key)
	}
}

func TestOpenNotRepository(t *testing.T) {
	setup(t)
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Join(dir, "missing")} {
		_, err := Open(context.Background(), d)
		var e *api.Error
		if !errors.Is(err, ErrNotRepository) || !errors.As(err, &e) || e.Code != api.CodeUnavailable {
			t.Errorf("Open(%s) = %v, want unavailable wrapping ErrNotRepository", d, err)
			continue
		}
		if d == dir && !strings.Contains(e.Message, "git init") {
			t.Errorf("Open(%s) = %v, want it to say what to do", d, err)
		}
	}
}

func TestOpenBare(t *testing.T) {
	setup(t)
	dir := filepath.Join(t.TempDir(), "b.git")
	run(t, filepath.Dir(dir), "init", "-q", "--bare", dir)
	if _, err := Open(context.Background(), dir); !errors.Is(err, ErrNotRepository) {
		t.Errorf("Open(bare) = %v, want ErrNotRepository", err)
	}
}

func TestOpenOldGit(t *testing.T) {
	setup(t)
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'git version 2.30.2'\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	_, err := Open(context.Background(), t.TempDir())
	if !errors.Is(err, ErrGit) || !strings.Contains(err.Error(), "git version 2.30.2") || !strings.Contains(err.Error(), "install git 2.36 or later: Debian 12 and Ubuntu 24.04 have one (apt-get install git)") {
		t.Errorf("Open with git 2.30.2 = %v, want ErrGit naming both versions and what to install", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := Open(context.Background(), t.TempDir()); !errors.Is(err, ErrGit) || !strings.Contains(err.Error(), "install") {
		t.Errorf("Open without git = %v, want ErrGit saying to install it", err)
	}
}

func TestParseVersion(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want [2]int
		ok   bool
	}{
		{"git version 2.39.5", [2]int{2, 39}, true},
		{"git version 2.45.1.windows.1", [2]int{2, 45}, true},
		{"git version 2.39.3 (Apple Git-145)", [2]int{2, 39}, true},
		{"git version 3.0", [2]int{3, 0}, true},
		{"hello", [2]int{}, false},
		{"git version x.y", [2]int{}, false},
	} {
		got, ok := parseVersion(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseVersion(%q) = %v %v, want %v %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
