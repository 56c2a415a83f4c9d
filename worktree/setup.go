package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SetupRule is one [[setup]] table of the person's config.toml, as the app hands it to the
// operations that make groups (Op.Setups): which repositories it is for, and what each of their
// new groups gets. The rules come from the person's config only, never from a repository: a
// cloned repository must not name files or run code on the person's machine by being opened.
// The first rule that matches the repository applies.
type SetupRule struct {
	// Path, when set, is the main checkout's folder the rule is for: absolute, or from the
	// home folder (~/) of the host where the repository is.
	Path string `json:"path,omitempty"`
	// Remote, when set, is a remote of the repositories the rule is for, as remoteKey reads
	// URLs: github.com/me/app matches git@github.com:me/app.git and https://github.com/me/app.
	Remote string `json:"remote,omitempty"`
	// Include are gitignore patterns of more ignored files to copy from the main checkout, as
	// the repository's IncludeFile names them.
	Include []string `json:"include,omitempty"`
	// Command, when set, is a shell command line that sets each new group's checkout up (npm
	// ci, say): recorded with the group when it is made, and run by the group's first terminal
	// before that terminal's own command (RunSetup), so that a long install does not hold up
	// the request that made the group. TimeoutSecs is its limit (DefaultSetupTimeout when 0).
	Command     string `json:"command,omitempty"`
	TimeoutSecs int    `json:"timeout_secs,omitempty"`
}

// setupRule is the first of r.rules that matches the repository, or nil.
func (r *Repo) setupRule(ctx context.Context) (*SetupRule, error) {
	var remotes []string
	var looked bool
	for i := range r.rules {
		rule := &r.rules[i]
		if rule.Path != "" && !samePath(expandHome(rule.Path), r.Top) {
			continue
		}
		if rule.Remote != "" {
			if !looked {
				var err error
				if remotes, err = r.remoteKeys(ctx); err != nil {
					return nil, err
				}
				looked = true
			}
			want := remoteKey(rule.Remote)
			found := false
			for _, k := range remotes {
				found = found || k == want
			}
			if !found {
				continue
			}
		}
		return rule, nil
	}
	return nil, nil
}

// remoteKeys are the repository's remotes' URLs, as remoteKey reads them.
func (r *Repo) remoteKeys(ctx context.Context) ([]string, error) {
	out, err := git(ctx, gitRun{dir: r.Top}, "config", "-z", "--get-regexp", `^remote\..*\.url$`)
	if err != nil {
		if exitCode(err) == 1 { // none
			return nil, nil
		}
		return nil, fmt.Errorf("read the repository's remotes: %w", err)
	}
	var keys []string
	for entry := range strings.SplitSeq(string(out), "\x00") {
		if _, url, ok := strings.Cut(entry, "\n"); ok {
			keys = append(keys, remoteKey(url))
		}
	}
	return keys, nil
}

// remoteKey is a remote's URL as rules name it: host and path, without the scheme, the user, the
// port, a trailing / or .git, the host in lower case. "git@github.com:me/app.git",
// "ssh://git@github.com:22/me/app" and "https://github.com/me/app/" are all
// "github.com/me/app". A local path stays itself, cleaned.
func remoteKey(url string) string {
	s := strings.TrimSpace(url)
	host, path := "", s
	if i := strings.Index(s, "://"); i >= 0 {
		rest := s[i+3:]
		host, path, _ = strings.Cut(rest, "/")
		if strings.HasPrefix(s, "file://") {
			host, path = "", "/"+path
		}
	} else if i := strings.IndexByte(s, ':'); i > 0 && !strings.Contains(s[:i], "/") {
		host, path = s[:i], s[i+1:] // scp-like: [user@]host:path
	}
	if host == "" {
		return filepath.Clean(path)
	}
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	if strings.HasPrefix(host, "[") { // [::1]:22
		if end := strings.IndexByte(host, ']'); end > 0 {
			host = host[1:end]
		}
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	return strings.ToLower(host) + "/" + strings.TrimSuffix(path, "/")
}

// expandHome is p with a leading ~/ made this user's home folder.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// samePath says whether folder a is b (b as git gives it, its symlinks resolved).
func samePath(a, b string) bool {
	return filepath.Clean(a) == b || realPath(filepath.Clean(a)) == b
}
