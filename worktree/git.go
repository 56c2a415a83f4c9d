package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/termsafe"
)

// MinGitVersion is the oldest git this package works with: `git worktree list --porcelain -z`,
// which Groups reads so that paths with newlines in them cannot be misread, came in git 2.36.
var MinGitVersion = [2]int{2, 36}

// gitEnvDropped are the variables that would make git work on another repository, index or
// object store than the one named on its command line, or run another program for a diff.
var gitEnvDropped = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
	"GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_EXTERNAL_DIFF",
	"GIT_DIFF_OPTS", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS",
	"GIT_QUARANTINE_PATH", "GIT_REPLACE_REF_BASE", "GIT_NO_REPLACE_OBJECTS",
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
	"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
	"GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_TRACE", "LC_ALL", "LANG",
}

// baseEnv is this process's environment without gitEnvDropped, plus what every git run gets.
func baseEnv() []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		for _, k := range gitEnvDropped {
			if strings.HasPrefix(kv, k+"=") {
				continue next
			}
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
}

// gitRun is one run of git.
type gitRun struct {
	dir    string    // the folder git runs in (-C)
	env    []string  // added to baseEnv
	stdin  io.Reader // nil: none
	stdout io.Writer // nil: kept and returned
	write  bool      // a command that writes: optional locks allowed
	detach bool      // run without a controlling terminal (detach): one that goes to the network
}

// GitError is git exiting with an error: the command (its first words), its exit code and the
// start of its stderr, escaped.
type GitError struct {
	Command  string
	ExitCode int
	Stderr   string
	Err      error // the exec error underneath (an *exec.ExitError, or ctx's error)
}

func (e *GitError) Error() string {
	msg := "git " + e.Command
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	} else if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *GitError) Unwrap() error { return e.Err }

// git runs git with args in r.dir and returns its stdout (when r.stdout is nil).
func git(ctx context.Context, r gitRun, args ...string) ([]byte, error) {
	full := []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}
	if !r.write {
		full = append(full, "--no-optional-locks")
	}
	if r.dir != "" {
		full = append(full, "-C", r.dir)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(append(baseEnv(), r.env...), promptEnv(ctx)...)
	cmd.Stdin = r.stdin
	if r.detach {
		detach(cmd)
	}
	var out bytes.Buffer
	if r.stdout != nil {
		cmd.Stdout = r.stdout
	} else {
		cmd.Stdout = &out
	}
	// The end of git's stderr says why it failed (its "fatal:" line comes last); what comes
	// before it (progress, hints, warnings) is what a long stderr loses.
	stderr := capped.Last(8192)
	cmd.Stderr = stderr
	err := cmd.Run()
	if err == nil {
		return out.Bytes(), nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	ge := &GitError{Command: commandName(args), ExitCode: -1, Err: err}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ge.ExitCode = ee.ExitCode()
	}
	ge.Stderr = termsafe.Escape(lastLines(strings.TrimSpace(stderr.String()), 600), 800)
	return out.Bytes(), ge
}

// lastLines is the end of s, about max bytes of it, from the start of a line when one starts
// there, marked with "…" when it is cut.
func lastLines(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return "…" + s
}

// commandName is git's command ("diff-tree"), or, for worktree, with its subcommand ("worktree
// add"), after git's own options (--literal-pathspecs).
func commandName(args []string) string {
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			if len(words) == 0 {
				continue
			}
			break
		}
		if words = append(words, a); len(words) == 2 || a != "worktree" {
			break
		}
	}
	return strings.Join(words, " ")
}

// exitCode is git's exit code in err, or -1.
func exitCode(err error) int {
	var ge *GitError
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}

// gitVersion runs git --version and returns its major and minor numbers.
func gitVersion(ctx context.Context) ([2]int, string, error) {
	out, err := git(ctx, gitRun{}, "--version")
	if err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			return [2]int{}, "", fmt.Errorf("%w: git not found on PATH: install it (Debian: apt-get install git)", ErrGit)
		}
		return [2]int{}, "", fmt.Errorf("%w: %w", ErrGit, err)
	}
	line := strings.TrimSpace(string(out))
	v, ok := parseVersion(line)
	if !ok {
		return [2]int{}, line, fmt.Errorf("%w: cannot read git's version from %s", ErrGit, termsafe.QuoteMax(line, 80))
	}
	return v, line, nil
}

// parseVersion reads "git version 2.39.5" (or "git version 2.39.5.windows.1", "git version
// 2.39.3 (Apple Git-145)").
func parseVersion(s string) ([2]int, bool) {
	rest, ok := strings.CutPrefix(s, "git version ")
	if !ok {
		return [2]int{}, false
	}
	words := strings.Fields(rest)
	if len(words) == 0 {
		return [2]int{}, false
	}
	parts := strings.SplitN(words[0], ".", 3)
	if len(parts) < 2 {
		return [2]int{}, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return [2]int{}, false
	}
	return [2]int{major, minor}, true
}

func versionOK(v [2]int) bool {
	return v[0] > MinGitVersion[0] || v[0] == MinGitVersion[0] && v[1] >= MinGitVersion[1]
}
