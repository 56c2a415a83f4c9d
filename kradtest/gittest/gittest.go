// Package gittest is, for tests, what a repository's outside world is: a real git server over
// HTTP with basic auth (git's own http-backend behind net/http/cgi, so that a push asks for a
// password as a hosting service does), and a stand-in for GitHub's CLI, gh, which records the
// arguments it was given (GitHub is the one service a test cannot run).
package gittest

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// Server serves, until the test ends, a bare repository r.git (its branch main, pushes allowed)
// over HTTP, to user with password alone (basic auth; anyone else gets 401 and a challenge). It
// returns the server's address (the repository is url + "/r.git") and the repository's folder.
// Without git's http-backend the test is skipped (failed under CI, as testbin.Need does).
func Server(t testing.TB, user, password string) (url, bare string) {
	t.Helper()
	testbin.Need(t, "git", "git")
	exe, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := filepath.Join(strings.TrimSpace(string(exe)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		testbin.Need(t, backend, "git")
	}
	root := t.TempDir()
	bare = filepath.Join(root, "r.git")
	for _, args := range [][]string{{"init", "-q", "--bare", "-b", "main", bare}, {"-C", bare, "config", "http.receivepack", "true"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, bare
}

// GH is a stand-in for GitHub's CLI: a program named gh in Dir, which records each argument it
// is given in Args (each ended by a NUL byte) and the folder it ran in in Args+".pwd", and then
// prints a pull request's address, URL, or, when it was made to fail, the message on stderr and
// exits 1.
type GH struct {
	Dir, Args, URL string
}

// FakeGH writes a GH that prints url, or fails with message fail when it is not "", and puts its
// folder first on this process's PATH for the test (t.Setenv).
func FakeGH(t *testing.T, url, fail string) *GH {
	t.Helper()
	g := WriteGH(t, url, fail)
	t.Setenv("PATH", g.Dir+":"+os.Getenv("PATH"))
	return g
}

// WriteGH writes a GH as FakeGH does, and leaves PATH alone: for a gh on an SSH host's PATH (its
// sessions' variables), where a parallel test cannot set this process's.
func WriteGH(t testing.TB, url, fail string) *GH {
	t.Helper()
	dir := t.TempDir()
	g := &GH{Dir: dir, Args: filepath.Join(dir, "args"), URL: url}
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\" >> '" + g.Args + "'; done\npwd >> '" + g.Args + ".pwd'\n"
	if fail != "" {
		script += "printf '%s\\n' '" + strings.ReplaceAll(fail, "'", `'\''`) + "' >&2\nexit 1\n"
	} else {
		script += "echo 'Creating pull request'\necho '" + url + "'\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "gh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return g
}

// Ran is the arguments of each of gh's runs so far, all in one list; nil when it has not run.
func (g *GH) Ran(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(g.Args)
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

// Forget forgets the runs so far.
func (g *GH) Forget() { os.Remove(g.Args); os.Remove(g.Args + ".pwd") }

// Where is the folder gh last ran in.
func (g *GH) Where() string {
	data, _ := os.ReadFile(g.Args + ".pwd")
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return lines[len(lines)-1]
}
