package worktree

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// includeRepo makes a repository at T/a/b/app (so that ../../secret from it is T/a/secret, which
// holds a secret), whose .gitignore ignores what the tests name; it returns the repository and
// the secret's path.
func includeRepo(t *testing.T) (dir, secret string) {
	t.Helper()
	setup(t)
	base := t.TempDir()
	dir = filepath.Join(base, "a", "b", "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	secret = filepath.Join(base, "a", "secret")
	write(t, filepath.Dir(secret), "secret", "the secret\n")
	run(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "README", "hello\n")
	write(t, dir, ".gitignore", ".env\n*.local\ncache/\nlink.env\nlinkdir\nsecret\nconf/\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "first")
	return dir, secret
}

// checkoutFiles lists every file and symlink of a checkout but .git, relative.
func checkoutFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// TestIncludedFiles: a new group's checkout gets the ignored files that .worktreeinclude and the
// config's rule name, with their content and permission bits; not a file git does not ignore, not
// a tracked one, not a symlink (named as skipped), and nothing from outside the repository,
// whatever the patterns say (../../secret, the secret's absolute path).
func TestIncludedFiles(t *testing.T) {
	dir, secret := includeRepo(t)
	write(t, dir, IncludeFile, strings.Join([]string{
		"# what a build needs",
		".env",
		"*.local",
		"link.env",
		"linkdir",
		"notignored.txt",
		"README",
		"../../secret",
		secret,
		"/" + filepath.Base(secret),
	}, "\n")+"\n")
	write(t, dir, ".env", "TOKEN=1\n")
	if err := os.Chmod(filepath.Join(dir, ".env"), 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "config/dev.local", "dev\n")
	write(t, dir, "cache/x/y.bin", "cached\n")
	write(t, dir, "cache/other.txt", "cached too\n")
	write(t, dir, "notignored.txt", "untracked, not ignored\n")
	if err := os.Symlink(secret, filepath.Join(dir, "link.env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	res := Do(context.Background(), Op{Op: OpCreate, Dir: dir, Root: root, Create: &CreateOptions{Name: "inc"},
		Setups: []SetupRule{{Path: "/elsewhere", Include: []string{"nothing"}}, {Path: dir, Include: []string{"cache/"}}}})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	g := res.Group
	// .worktreeinclude itself is untracked here and not ignored: not copied.
	want := []string{".env", ".gitignore", "README", "cache/other.txt", "cache/x/y.bin", "config/dev.local"}
	if got := checkoutFiles(t, g.Dir); !slices.Equal(got, want) {
		t.Errorf("the checkout holds %q, want %q", got, want)
	}
	for name, content := range map[string]string{".env": "TOKEN=1\n", "config/dev.local": "dev\n", "cache/x/y.bin": "cached\n"} {
		got, err := os.ReadFile(filepath.Join(g.Dir, name))
		if err != nil || string(got) != content {
			t.Errorf("%s in the checkout: %q, %v; want %q", name, got, err, content)
		}
	}
	if fi, err := os.Stat(filepath.Join(g.Dir, ".env")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf(".env in the checkout: %v, %v; want mode 0600, as in the main checkout", fi, err)
	}
	in := g.Included
	if in == nil || in.Files != 4 || in.Bytes != int64(len("TOKEN=1\ndev\ncached\ncached too\n")) || in.Cut != "" {
		t.Fatalf("Included = %+v, want 4 files, their bytes, nothing cut", in)
	}
	skipped := strings.Join(in.Skipped, "; ")
	if !strings.Contains(skipped, "link.env (a symlink)") || !strings.Contains(skipped, "linkdir (a symlink)") || len(in.Skipped) != 2 {
		t.Errorf("Included.Skipped = %q, want link.env and linkdir, symlinks", in.Skipped)
	}
	// Nothing was written outside the checkout: the secret's folder holds the secret alone.
	if entries, err := os.ReadDir(filepath.Dir(secret)); err != nil || len(entries) != 2 { // secret, b
		t.Errorf("the folder above the repository: %v, %v; want the secret and b alone", entries, err)
	}
}

// TestIncludedThroughASymlinkedFolder: a group whose base has a tracked symlink conf -> a folder
// outside gets nothing written through it, though the main checkout's conf/ is a real folder of
// ignored files that .worktreeinclude names.
func TestIncludedThroughASymlinkedFolder(t *testing.T) {
	dir, secret := includeRepo(t)
	outside := filepath.Join(filepath.Dir(secret), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "conf")); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "add", "-f", "conf")
	run(t, dir, "commit", "-q", "-m", "conf is a symlink")
	old := run(t, dir, "rev-parse", "HEAD")
	run(t, dir, "rm", "-q", "--cached", "conf")
	run(t, dir, "commit", "-q", "-m", "conf is a folder")
	if err := os.Remove(filepath.Join(dir, "conf")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "conf/app.env", "local\n")
	write(t, dir, IncludeFile, "conf/\n")
	r := open(t, dir)
	g, err := r.Create(context.Background(), CreateOptions{Name: "old", Base: old, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(g.Dir, "conf")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the checkout's conf: %v, %v; want the tracked symlink", fi, err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the folder the symlink leads to holds %v, want nothing", entries)
	}
	if in := g.Included; in == nil || in.Files != 0 || len(in.Skipped) != 1 || !strings.Contains(in.Skipped[0], "conf/app.env") {
		t.Errorf("Included = %+v, want conf/app.env skipped", in)
	}
}

// TestIncludedCapped: past maxIncludeFiles files or maxIncludeBytes bytes, the rest is left out,
// and Included.Cut says how many.
func TestIncludedCapped(t *testing.T) {
	dir, _ := includeRepo(t)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		write(t, dir, "cache/"+n, "12345\n")
	}
	write(t, dir, IncludeFile, "cache/\n")
	r := open(t, dir)
	defer func(f int, b int64) { maxIncludeFiles, maxIncludeBytes = f, b }(maxIncludeFiles, maxIncludeBytes)

	maxIncludeFiles = 3
	g, err := r.Create(context.Background(), CreateOptions{Name: "few", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if in := g.Included; in.Files != 3 || !strings.Contains(in.Cut, "2 of the 5 files") || !strings.Contains(in.Cut, "at most 3 files") {
		t.Errorf("Included = %+v, want 3 files and the cut said", in)
	}
	if got := checkoutFiles(t, g.Dir); !slices.Equal(got, []string{".gitignore", "README", "cache/a", "cache/b", "cache/c"}) {
		t.Errorf("the checkout holds %q", got)
	}

	maxIncludeFiles, maxIncludeBytes = 1000, 13
	g, err = r.Create(context.Background(), CreateOptions{Name: "small", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if in := g.Included; in.Files != 2 || in.Bytes != 12 || !strings.Contains(in.Cut, "3 of the 5 files") {
		t.Errorf("Included = %+v, want 2 files (12 bytes) and the cut said", in)
	}
}

// TestIncludedNotLookedForInIgnoredFolders: a pattern with no folder in it (.env, **/.env)
// copies its files from every folder git does not ignore whole (the top, a tracked folder, an
// untracked folder whose files are all ignored), but not from a folder the repository ignores
// whole (node_modules/, at the top or deeper); a pattern that reaches into such a folder by its
// leading folders copies what it names there (data/fixtures/*.txt), and one that names the
// folder (node_modules, fixtures/) copies the folder. With no room on git's command line for the
// folders it leaves out, the include step copies the same files.
func TestIncludedNotLookedForInIgnoredFolders(t *testing.T) {
	dir := newRepo(t)
	write(t, dir, ".gitignore", "node_modules/\n.env\ndata/fixtures/\n")
	write(t, dir, "apps/api/main.js", "//\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "ignores")
	for _, name := range []string{".env", "apps/api/.env", "secrets/.env", "node_modules/pkg/.env", "node_modules/pkg/index.js",
		"new/node_modules/q/.env", "apps/api/node_modules/r/.env", "data/fixtures/a.txt", "data/fixtures/b.bin"} {
		write(t, dir, name, name+"\n")
	}
	write(t, dir, IncludeFile, ".env\n**/.env\ndata/fixtures/*.txt\n")
	r := open(t, dir)
	tracked := []string{".gitignore", "README", "apps/api/main.js", "main.go"}
	create := func(name string, include ...string) []string {
		t.Helper()
		res := Do(context.Background(), Op{Op: OpCreate, Dir: dir, Root: t.TempDir(), Create: &CreateOptions{Name: name},
			Setups: []SetupRule{{Path: r.Top, Include: include}}})
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		var copied []string
		for _, f := range checkoutFiles(t, res.Group.Dir) {
			if !slices.Contains(tracked, f) {
				copied = append(copied, f)
			}
		}
		if res.Group.Included == nil || res.Group.Included.Files != len(copied) {
			t.Errorf("group %s: Included = %+v, with %d files copied", name, res.Group.Included, len(copied))
		}
		return copied
	}
	want := []string{".env", "apps/api/.env", "data/fixtures/a.txt", "secrets/.env"}
	if got := create("env"); !slices.Equal(got, want) {
		t.Errorf("the checkout got %q, want %q", got, want)
	}
	all := []string{".env", "apps/api/.env", "apps/api/node_modules/r/.env", "data/fixtures/a.txt", "data/fixtures/b.bin",
		"new/node_modules/q/.env", "node_modules/pkg/.env", "node_modules/pkg/index.js", "secrets/.env"}
	if got := create("named", "node_modules", "fixtures/"); !slices.Equal(got, all) {
		t.Errorf("with node_modules and fixtures/ named, the checkout got %q, want %q", got, all)
	}
	defer func(n int) { maxExcludeArgs = n }(maxExcludeArgs)
	maxExcludeArgs = 0
	if got := create("noroom"); !slices.Equal(got, want) {
		t.Errorf("with no folder left out of git's walk, the checkout got %q, want %q", got, want)
	}
}

// TestIncludeReach: which folders the repository ignores whole a list's patterns reach.
func TestIncludeReach(t *testing.T) {
	for _, c := range []struct {
		list string
		dir  string
		want bool
	}{
		{".env\n*.local\n**/.env\n", "node_modules/", false},
		{".env\n", "a/node_modules/", false},
		{"node_modules\n", "a/node_modules/", true},
		{"node_modules/\n", "node_modules/", true},
		{"NODE_MODULES\n", "node_modules/", true}, // core.ignoreCase
		{"fixtures/\n", "data/fixtures/", true},
		{"data\n", "data/fixtures/", true},
		{"*.d\n", "conf.d/", true},
		{"[!a]ist\n", "dist/", true},
		{"[!d]ist\n", "dist/", false},
		{"[[:alpha:]]ist\n", "dist/", true}, // unread: looked into
		{"data/fixtures/*.txt\n", "data/fixtures/", true},
		{"/data/fixtures/*.txt\n", "data/", true},
		{"data/fixtures/*.txt\n", "data/other/", false},
		{"Data/Fixtures/*.txt\n", "data/fixtures/", true}, // core.ignoreCase
		{"data/\n", "data/fixtures/", true},
		{"docs/.env\n", "node_modules/", false},
		{"*/x\n", "node_modules/", true},
		{"!node_modules\n", "node_modules/", false},
		{"# node_modules\n", "node_modules/", false},
		{"node_modules   \n", "node_modules/", true},
		{"node_modules\r\n", "node_modules/", true},
		{"", "node_modules/", false},
	} {
		if got := parseReach([]byte(c.list)).reaches(c.dir); got != c.want {
			t.Errorf("%q reaches %s: %v, want %v", c.list, c.dir, got, c.want)
		}
	}
}

// TestIncludedNone: without .worktreeinclude and without a rule, nothing is looked for.
func TestIncludedNone(t *testing.T) {
	dir, _ := includeRepo(t)
	write(t, dir, ".env", "x\n")
	g, err := open(t, dir).Create(context.Background(), CreateOptions{Name: "plain", Root: t.TempDir()})
	if err != nil || g.Included != nil {
		t.Fatalf("Create = %+v, %v; want no Included", g, err)
	}
	if _, err := os.Lstat(filepath.Join(g.Dir, ".env")); err == nil {
		t.Error(".env was copied, which nothing names")
	}
}

func TestRemoteKey(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"git@github.com:me/app.git", "github.com/me/app"},
		{"ssh://git@GitHub.com:22/me/app", "github.com/me/app"},
		{"https://user:pw@github.com/me/app/", "github.com/me/app"},
		{"https://github.com/me/app.git", "github.com/me/app"},
		{"github.com/me/app", "github.com/me/app"},
		{"ssh://[::1]:2222/srv/app.git", "::1/srv/app"},
		{"/srv/git/app.git", "/srv/git/app.git"},
		{"file:///srv/git/app", "/srv/git/app"},
	} {
		if got := remoteKey(tt.url); got != tt.want {
			t.Errorf("remoteKey(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

// TestSetupRuleByRemote: a rule names its repository by a remote, whatever the URL's form.
func TestSetupRuleByRemote(t *testing.T) {
	dir, _ := includeRepo(t)
	run(t, dir, "remote", "add", "origin", "git@github.com:me/app.git")
	write(t, dir, ".env", "x\n")
	res := Do(context.Background(), Op{Op: OpCreate, Dir: dir, Root: t.TempDir(), Create: &CreateOptions{Name: "r"},
		Setups: []SetupRule{{Remote: "https://github.com/me/other", Include: []string{"*.local"}}, {Remote: "github.com/me/app", Include: []string{".env"}}}})
	if res.Error != nil || res.Group.Included == nil || res.Group.Included.Files != 1 {
		t.Fatalf("Create = %+v, want .env copied by the second rule", res)
	}
}
