package testbin

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoGoSource is GoSourceRepo's error when this machine has no Go source tree to copy: the
// benchmarks that need it skip.
var ErrNoGoSource = errors.New("no Go source tree to copy")

// GoSourceRepo makes the benchmarks' real repository of real size at dst (which must not
// exist): a copy of Go's own source tree ($(go env GOROOT)/src, about 11,500 files), committed
// once on branch main and packed, as a clone is, with gc.auto 0 so that no `gc --auto` repacks
// in the background while a benchmark runs. It takes a minute or two.
func GoSourceRepo(dst string) error {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("%w: go env GOROOT: %v", ErrNoGoSource, err)
	}
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: %s is missing", ErrNoGoSource, src)
	}
	if out, err := exec.Command("cp", "-R", "--", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("copy %s: %w: %s", src, err, out)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "gc.auto", "0"},
		{"add", "-A"},
		{"commit", "-q", "-m", "Go's source tree"},
		{"repack", "-a", "-d", "-q"},
	} {
		cmd := exec.Command("git", append([]string{"-C", dst}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
		}
	}
	return nil
}
