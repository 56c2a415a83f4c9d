package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLayoutListsEveryPackage: the layout table (docs/layout.md) has a row for every folder of Go code in
// the repository (its packages, commands, tests' helpers), and no row for a folder that is gone.
func TestLayoutListsEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("docs/layout.md has no section \"## Layout\"")
	}
	layout, _, _ = strings.Cut(layout, "\n#")
	var rows []string
	for l := range strings.Lines(layout) {
		if folder, ok := strings.CutPrefix(l, "| `"); ok {
			folder, _, _ = strings.Cut(folder, "`")
			rows = append(rows, strings.TrimSuffix(folder, "/"))
		}
	}
	var code []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			dir, _ := filepath.Rel(root, filepath.Dir(path))
			if !slices.Contains(code, dir) {
				code = append(code, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range code {
		if !slices.Contains(rows, filepath.ToSlash(dir)) {
			t.Errorf("docs/layout.md's table has no row for %s/", dir)
		}
	}
	for _, row := range rows {
		if _, err := os.Stat(filepath.Join(root, row)); err != nil {
			t.Errorf("docs/layout.md's table has a row for %s/, which is not there", row)
		}
	}
}

// TestHarnessesDoNotShip: no program krad ships links a test harness: nothing of kradtest/, the
// harnesses' room, nor a harness kept beside its package (a name ending in test, as sshdtest).
// The harnesses start servers as other users, fake agents and write secrets to files; they are
// for tests alone.
func TestHarnessesDoNotShip(t *testing.T) {
	const module = "github.com/krad-ade/krad"
	for _, goos := range []string{"linux", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", "./cmd/krad", "./cmd/krad-ade", "./cmd/krad-static")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=arm64")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: go list -deps: %v", goos, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, module+"/cmd/krad-ade/appmain") {
			t.Fatalf("%s: go list -deps did not list the app; the check below means nothing", goos)
		}
		for _, pkg := range deps {
			rest, ours := strings.CutPrefix(pkg, module+"/")
			if ours && (strings.HasPrefix(rest, "kradtest/") || strings.HasSuffix(path.Base(rest), "test")) {
				t.Errorf("%s: a shipped program links the test harness %s", goos, pkg)
			}
		}
	}
}
