package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// Repo is a git repository with a checkout: the one that holds the folder given to [Open].
type Repo struct {
	// Top is the main checkout's top folder (group ""), even when Open was given a folder in
	// one of the repository's other worktrees.
	Top string
	// CommonDir is the repository's git folder shared by all its worktrees (Top/.git,
	// usually), absolute.
	CommonDir string
	// Key names the repository among others under a worktrees root: its folder's name, "-",
	// and 8 hex digits of a hash of CommonDir.
	Key string

	// listed is the worktree list Open read, which the first listing after it takes instead of
	// running git again (an op is Open and then its work, a moment later); nil once taken.
	mu     sync.Mutex
	listed []worktree

	// rules are the person's [[setup]] rules for the environment (Op.Setups): what a new
	// group's checkout gets (setupRule).
	rules []SetupRule
}

// Open finds the repository that holds dir. A dir in no repository is an error wrapping
// [ErrNotRepository] that says what to do; a git missing or older than [MinGitVersion], one
// wrapping [ErrGit]. Both are *api.Error with code unavailable.
func Open(ctx context.Context, dir string) (r *Repo, err error) {
	// git's version is asked only when something fails: a git too old for the commands below
	// fails them, and is then named as the cause. Each op is a process of its own on a host,
	// so a git run saved here is saved on every request.
	defer func() {
		if err != nil {
			err = tooOld(ctx, err)
		}
	}()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, api.Errorf(api.CodeUnavailable, "%s is no folder: groups need the environment's folder to be in a git repository",
			termsafe.Quote(abs)).WithCause(ErrNotRepository)
	}
	out, err := git(ctx, gitRun{dir: abs}, "rev-parse", "--path-format=absolute", "--is-bare-repository", "--git-common-dir")
	if err != nil {
		if exitCode(err) == 128 && strings.Contains(err.Error(), "not a git repository") {
			return nil, api.Errorf(api.CodeUnavailable,
				"%s is in no git repository: groups are git worktrees; run `git init` there and commit, or give the environment a folder in a repository",
				termsafe.Quote(abs)).WithCause(ErrNotRepository)
		}
		return nil, fmt.Errorf("open %s: %w", termsafe.Quote(abs), err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("open %s: git rev-parse said %s", termsafe.Quote(abs), termsafe.QuoteMax(string(out), 200))
	}
	if lines[0] == "true" {
		return nil, api.Errorf(api.CodeUnavailable, "%s is in a bare repository, which has no checkout to make groups of",
			termsafe.Quote(abs)).WithCause(ErrNotRepository)
	}
	r = &Repo{CommonDir: filepath.Clean(lines[1])}
	wts, err := r.worktrees(ctx)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", termsafe.Quote(abs), err)
	}
	if len(wts) == 0 || wts[0].bare {
		return nil, api.Errorf(api.CodeUnavailable, "%s: the repository has no main checkout", termsafe.Quote(abs)).WithCause(ErrNotRepository)
	}
	r.Top = wts[0].path
	r.listed = wts
	sum := sha256.Sum256([]byte(r.CommonDir))
	r.Key = keyName(filepath.Base(r.Top)) + "-" + hex.EncodeToString(sum[:4])
	return r, nil
}

// tooOld is err, or, when git is missing or older than [MinGitVersion], the error that says so
// (an *api.Error with code unavailable wrapping [ErrGit]), which is then the cause of err.
func tooOld(ctx context.Context, err error) error {
	var ae *api.Error
	if errors.As(err, &ae) && !errors.Is(err, ErrGit) || ctx.Err() != nil {
		return err // a verdict of the package's own (no repository, say), or cancelled
	}
	v, line, verr := gitVersion(ctx)
	if verr != nil {
		return api.Errorf(api.CodeUnavailable, "%v", verr).WithCause(verr)
	}
	if !versionOK(v) {
		return api.Errorf(api.CodeUnavailable,
			"%s is too old: groups need git %d.%d or later (for `git worktree list --porcelain -z`); install git %[2]d.%[3]d or later: Debian 12 and Ubuntu 24.04 have one (apt-get install git), others see https://git-scm.com/downloads",
			termsafe.QuoteMax(line, 80), MinGitVersion[0], MinGitVersion[1]).WithCause(ErrGit)
	}
	return err
}

// keyName makes a folder's name safe as part of a path segment: characters other than
// A-Z a-z 0-9 . _ - become _, and it is cut to 40 bytes.
func keyName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	if len(b) == 0 || b[0] == '.' {
		b = append([]byte("r"), b...)
	}
	return string(b)
}

// worktree is one record of `git worktree list --porcelain -z`.
type worktree struct {
	path     string
	head     string // the commit checked out; "" when none (unborn)
	branch   string // refs/heads/…; "" when detached
	bare     bool
	detached bool
	locked   bool
	prunable bool // git says its folder is gone
}

// worktrees lists the repository's worktrees, the main one first: the list Open read, the first
// time after it; git's list, read now, after that.
func (r *Repo) worktrees(ctx context.Context) ([]worktree, error) {
	r.mu.Lock()
	wts := r.listed
	r.listed = nil
	r.mu.Unlock()
	if wts != nil {
		return wts, nil
	}
	// git fails a list that meets a worktree another git is adding or removing ("failed to
	// read …"): those hold the admin lock, and are soon done; try again, a few times.
	for try := 0; ; try++ {
		out, err := git(ctx, gitRun{dir: r.CommonDir}, "worktree", "list", "--porcelain", "-z")
		if err == nil {
			return parseWorktreeList(out)
		}
		if try == 4 || ctx.Err() != nil || !strings.Contains(err.Error(), "failed to read") {
			return nil, err
		}
		time.Sleep(time.Duration(try+1) * 20 * time.Millisecond)
	}
}

// parseWorktreeList reads `git worktree list --porcelain -z`: NUL-ended "key value" fields,
// each record ended by an empty field.
func parseWorktreeList(out []byte) ([]worktree, error) {
	var wts []worktree
	var cur *worktree
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			cur = nil
			continue
		}
		key, val, _ := strings.Cut(f, " ")
		if key == "worktree" {
			wts = append(wts, worktree{path: val})
			cur = &wts[len(wts)-1]
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("git worktree list: a field %s outside a record", termsafe.QuoteMax(f, 60))
		}
		switch key {
		case "HEAD":
			if strings.Trim(val, "0") != "" {
				cur.head = val
			}
		case "branch":
			cur.branch = val
		case "bare":
			cur.bare = true
		case "detached":
			cur.detached = true
		case "locked":
			cur.locked = true
		case "prunable":
			cur.prunable = true
		}
	}
	return wts, nil
}
