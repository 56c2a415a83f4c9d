package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/krad-ade/krad/internal/termsafe"
)

// A new group's checkout has what git tracks, and none of the ignored files a build needs (.env,
// a local config, built tools). The repository's IncludeFile (Claude Code's .worktreeinclude:
// gitignore patterns) and the person's config (SetupRule.Include) name those to copy from the
// main checkout. What holds, whatever the patterns say:
//
//   - git chooses the files, not a walk of ours: the untracked files the patterns match (git
//     ls-files --others --ignored --exclude-from), of which only those the repository itself
//     ignores (git check-ignore) are copied. git lists paths inside the main checkout only, so a
//     pattern such as ../../secret or /etc/passwd matches nothing outside it.
//   - A folder the repository ignores whole (node_modules/) is left out of that walk unless a
//     pattern reaches into it by name (includereach.go): .env alone does not make git open
//     50,000 files of node_modules at every new group.
//   - Every path is checked again before it is read: local (no "..", not absolute), and no part
//     of it a symlink, in the main checkout or in the group's (lstat of each part). A symlink is
//     not copied, and is named in Included.Skipped. The files are opened through an os.Root of
//     each checkout, so that a folder swapped for a symlink after the check still cannot lead
//     out of it, and the file read must be the one checked (os.SameFile).
//   - Only regular files, with their permission bits; a file that exists in the new checkout
//     (tracked on the group's base) is left as it is.
//   - At most maxIncludeFiles files and maxIncludeBytes bytes: past either, the rest is left
//     out, and Included.Cut says so.

// IncludeFile is the file in the main checkout's top folder that names, in gitignore's pattern
// format, the ignored files to copy into every new group's checkout.
const IncludeFile = ".worktreeinclude"

// The caps on what a new group's checkout gets copied: maxIncludeFiles files and
// maxIncludeBytes bytes in all. Tests lower them.
var (
	maxIncludeFiles       = 1000
	maxIncludeBytes int64 = 64 << 20
)

// maxIncludeFile is the most of IncludeFile read: a list of patterns is a few lines.
const maxIncludeFile = 64 << 10

// maxSkipped is how many skipped files Included names.
const maxSkipped = 20

// Included is what was copied into a new group's checkout of the ignored files the repository's
// IncludeFile and the config name.
type Included struct {
	// Files and Bytes are what was copied.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Cut says that the caps left files out, how many, and what to do.
	Cut string `json:"cut,omitempty"`
	// Skipped names files not copied, and why ("a symlink", "exists in the checkout", an
	// error): at most 20, and SkippedMore counts the others.
	Skipped     []string `json:"skipped,omitempty"`
	SkippedMore int      `json:"skipped_more,omitempty"`
}

func (in *Included) skip(path, why string) {
	if len(in.Skipped) < maxSkipped {
		in.Skipped = append(in.Skipped, termsafe.Quote(path)+" ("+why+")")
	} else {
		in.SkippedMore++
	}
}

// include copies into the new checkout dir the ignored files of the main checkout that its
// IncludeFile and patterns name (see above). It returns nil when nothing names any file. Its
// error is for git failing, or the patterns file failing to be read; a file that cannot be copied
// is skipped, and said in Included.
func (r *Repo) include(ctx context.Context, dir string, patterns []string) (*Included, error) {
	list, err := r.includePatterns(patterns)
	if err != nil || list == nil {
		return nil, err
	}
	tmp, err := os.CreateTemp("", "krad-include-*")
	if err != nil {
		return nil, fmt.Errorf("copy the included files: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(list)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("copy the included files: %w", werr)
	}
	// The folders the repository ignores whole that no pattern reaches (includereach.go) are
	// left out of git's walk, as far as a command line holds them, and out of its answer.
	folders, err := r.ignoredFolders(ctx)
	if err != nil {
		return nil, err
	}
	reach := parseReach(list)
	closed := map[string]bool{}
	args := []string{"ls-files", "-z", "--others", "--ignored", "--exclude-from=" + tmp.Name(), "--", "."}
	size := 0
	for _, f := range folders {
		if reach.reaches(f) {
			continue
		}
		closed[f] = true
		spec := ":(exclude,literal)" + f
		if size += len(spec) + 1; size <= maxExcludeArgs {
			args = append(args, spec)
		}
	}
	out, err := git(ctx, gitRun{dir: r.Top, env: pathspecMagic}, args...)
	if err != nil {
		return nil, fmt.Errorf("list the files %s names: %w", IncludeFile, err)
	}
	var listed []byte
	for p := range strings.SplitSeq(string(out), "\x00") {
		if p != "" && !underAny(p, closed) {
			listed = append(append(listed, p...), 0)
		}
	}
	if len(listed) == 0 {
		return &Included{}, nil
	}
	// Of those, only what the repository itself ignores.
	out, err = git(ctx, gitRun{dir: r.Top, stdin: bytes.NewReader(listed)}, "check-ignore", "-z", "--stdin")
	if err != nil && exitCode(err) != 1 { // 1: none is ignored
		return nil, fmt.Errorf("check which included files git ignores: %w", err)
	}
	var paths []string
	for p := range strings.SplitSeq(string(out), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return copyIncluded(r.Top, dir, paths), nil
}

// maxExcludeArgs is the most bytes of folders left out of the include step's git ls-files on its
// command line (a command line holds 128 KiB in one word and about 2 MiB in all on Linux). Past
// it, git looks through the other folders too, and what it lists in them is dropped.
var maxExcludeArgs = 64 << 10

// pathspecMagic is the environment of a git run whose pathspecs carry their magic themselves
// (":(exclude,literal)…"): a person's GIT_LITERAL_PATHSPECS would make them names, and
// GIT_ICASE_PATHSPECS would leave out folders whose names differ in case alone.
var pathspecMagic = []string{"GIT_LITERAL_PATHSPECS=0", "GIT_ICASE_PATHSPECS=0"}

// ignoredFolders lists the folders of the main checkout that the repository ignores whole (a
// pattern of its own names the folder: node_modules/, dist/), each ending in "/", as git finds
// them without opening them: `git ls-files --others --ignored --exclude-standard --directory`
// lists such a folder as one entry (and a folder whose files are all ignored though no pattern
// names it, followed by its files), and git check-ignore keeps those a pattern names.
func (r *Repo) ignoredFolders(ctx context.Context) ([]string, error) {
	out, err := git(ctx, gitRun{dir: r.Top}, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil {
		return nil, fmt.Errorf("list the folders the repository ignores: %w", err)
	}
	var dirs []byte
	for p := range strings.SplitSeq(string(out), "\x00") {
		if strings.HasSuffix(p, "/") && localPath(strings.TrimSuffix(p, "/")) == "" {
			dirs = append(append(dirs, p...), 0)
		}
	}
	if len(dirs) == 0 {
		return nil, nil
	}
	out, err = git(ctx, gitRun{dir: r.Top, stdin: bytes.NewReader(dirs)}, "check-ignore", "-z", "--stdin")
	if err != nil && exitCode(err) != 1 { // 1: none is ignored
		return nil, fmt.Errorf("check which folders the repository ignores: %w", err)
	}
	var folders []string
	for p := range strings.SplitSeq(string(out), "\x00") {
		if strings.HasSuffix(p, "/") {
			folders = append(folders, p)
		}
	}
	return folders, nil
}

// underAny says whether path p is in one of folders (each ending in "/").
func underAny(p string, folders map[string]bool) bool {
	for i := range len(p) {
		if p[i] == '/' && folders[p[:i+1]] {
			return true
		}
	}
	return false
}

// includePatterns is the list of patterns for git's --exclude-from: the main checkout's
// IncludeFile, then the config's patterns, one a line; nil when there are none.
func (r *Repo) includePatterns(patterns []string) ([]byte, error) {
	var list []byte
	p := filepath.Join(r.Top, IncludeFile)
	switch fi, err := os.Lstat(p); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", IncludeFile, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (a symlink, say): make it one, or remove it", termsafe.Quote(p))
	default:
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", IncludeFile, err)
		}
		list, err = io.ReadAll(io.LimitReader(f, maxIncludeFile+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", IncludeFile, err)
		}
		if len(list) > maxIncludeFile {
			return nil, fmt.Errorf("%s is longer than %d KiB: it names files to copy, in a few lines", termsafe.Quote(p), maxIncludeFile>>10)
		}
	}
	for _, pat := range patterns {
		if strings.ContainsAny(pat, "\n\r\x00") {
			continue // config refuses them; one would be two patterns
		}
		if len(list) > 0 && list[len(list)-1] != '\n' {
			list = append(list, '\n')
		}
		list = append(list, pat...)
		list = append(list, '\n')
	}
	if len(bytes.TrimSpace(list)) == 0 {
		return nil, nil
	}
	return list, nil
}

// copyIncluded copies paths (relative, as git listed them) from the main checkout top to the new
// checkout dir, within the caps.
func copyIncluded(top, dir string, paths []string) *Included {
	in := &Included{}
	src, err := os.OpenRoot(top)
	if err != nil {
		in.skip(".", err.Error())
		return in
	}
	defer src.Close()
	dst, err := os.OpenRoot(dir)
	if err != nil {
		in.skip(".", err.Error())
		return in
	}
	defer dst.Close()
	for i, p := range paths {
		if in.Files >= maxIncludeFiles {
			in.Cut = fmt.Sprintf("%d of the %d files to include were left out: at most %d files are copied into a new group; name fewer in %s",
				len(paths)-i, len(paths), maxIncludeFiles, IncludeFile)
			break
		}
		fi, why := includable(src, p)
		if why != "" {
			in.skip(p, why)
			continue
		}
		if in.Bytes+fi.Size() > maxIncludeBytes {
			in.Cut = fmt.Sprintf("%d of the %d files to include were left out: at most %d MiB is copied into a new group; name fewer or smaller files in %s",
				len(paths)-i, len(paths), maxIncludeBytes>>20, IncludeFile)
			break
		}
		n, err := copyOne(src, dst, p, fi)
		if err != nil {
			in.skip(p, termsafe.Shorten(err.Error(), 200))
			continue
		}
		in.Files++
		in.Bytes += n
	}
	return in
}

// includable checks path p of the main checkout: local, no part of it a symlink, a regular file.
// It returns the file's lstat, or why it is not copied.
func includable(src *os.Root, p string) (fs.FileInfo, string) {
	if why := localPath(p); why != "" {
		return nil, why
	}
	fi, why := noSymlinks(src, p)
	if why != "" {
		return nil, why
	}
	if !fi.Mode().IsRegular() {
		return nil, "not a regular file"
	}
	return fi, ""
}

// localPath says why p, a path git listed, is not one to copy: not local to the checkout (an
// absolute path, one with "..", or one that is not clean); "" when it is.
func localPath(p string) string {
	if p == "." || !filepath.IsLocal(p) || filepath.Clean(p) != p {
		return "not a path inside the checkout"
	}
	return ""
}

// noSymlinks lstats every part of p under root, and says why not when one is a symlink, or a part
// before the last is no folder. It returns the last part's lstat.
func noSymlinks(root *os.Root, p string) (fs.FileInfo, string) {
	parts := strings.Split(p, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := root.Lstat(sub)
		if err != nil {
			return nil, termsafe.Shorten(err.Error(), 200)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if i == len(parts)-1 {
				return nil, "a symlink"
			}
			return nil, "under a symlink, " + termsafe.Quote(sub)
		}
		if i < len(parts)-1 && !fi.IsDir() {
			return nil, termsafe.Quote(sub) + " is not a folder"
		}
		if i == len(parts)-1 {
			return fi, ""
		}
	}
	return nil, "an empty path"
}

// copyOne copies file p, whose lstat is want, from src to dst, making its folders in dst (each
// checked to be no symlink), with its permission bits; never over a file that exists. It returns
// the bytes copied.
func copyOne(src, dst *os.Root, p string, want fs.FileInfo) (int64, error) {
	parts := strings.Split(p, "/")
	for i := range parts[:len(parts)-1] {
		sub := strings.Join(parts[:i+1], "/")
		perm := fs.FileMode(0o755)
		if fi, err := src.Lstat(sub); err == nil {
			perm = fi.Mode().Perm() | 0o700
		}
		if err := dst.Mkdir(sub, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return 0, err
		}
		fi, err := dst.Lstat(sub)
		if err != nil {
			return 0, err
		}
		if !fi.IsDir() {
			return 0, fmt.Errorf("%s in the new checkout is not a folder", termsafe.Quote(sub))
		}
	}
	in, err := src.Open(p)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	got, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if !os.SameFile(got, want) {
		return 0, errors.New("it changed while it was copied")
	}
	out, err := dst.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, want.Mode().Perm())
	if errors.Is(err, fs.ErrExist) {
		return 0, errors.New("exists in the checkout")
	}
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(in, want.Size()))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		dst.Remove(p)
		return 0, err
	}
	return n, nil
}
