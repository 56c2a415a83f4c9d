package worktree

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// DefaultMaxPatch is the cap on a patch's text when ChangesOptions.MaxPatch is 0, and
// MaxMaxPatch the largest cap that may be asked for.
const (
	DefaultMaxPatch = api.DefaultPatch
	MaxMaxPatch     = api.MaxPatch
)

// DefaultMaxFilePatch is the cap on one file's own patch when ChangesOptions.MaxFilePatch is 0:
// 256 KiB, a quarter of the default total. A patch that large is rarely one a person or an agent
// reads line by line (it is a data file, a minified bundle, a vendored library, a fixture); left
// in, four of them fill the whole answer and push out the small files that hold the real work.
// Left out, it is still listed with its line counts, and can be asked for by path.
const DefaultMaxFilePatch = 256 << 10

// The reasons a file's patch is left out of Changes.Patch (File.LeftOut).
const (
	// LeftOutBinary: a binary file, and ChangesOptions.Binary was not set.
	LeftOutBinary = "binary"
	// LeftOutTooLarge: the file's own patch is larger than the per-file cap, or it does not
	// fit in what the total cap leaves. Ask for it by path, or with a larger cap.
	LeftOutTooLarge = "too large"
	// LeftOutGenerated: a lockfile, or a file the repository's gitattributes mark
	// linguist-generated. Ask for it by path.
	LeftOutGenerated = "generated"
	// LeftOutNotAsked: ChangesOptions.Paths named other files.
	LeftOutNotAsked = "not asked for"
)

// ChangesOptions say how much of a group's changes [Repo.Changes] returns.
type ChangesOptions struct {
	// Stat: the list of files only, no patch.
	Stat bool
	// MaxPatch caps the patch's text, in bytes: 0 means DefaultMaxPatch; more than MaxMaxPatch
	// is MaxMaxPatch.
	MaxPatch int
	// MaxFilePatch caps one file's own patch, in bytes: a file whose patch is larger is left
	// out ("too large") even when the total cap has room. 0 means DefaultMaxFilePatch. A file
	// named in Paths has no cap of its own: it gets its whole patch if the total cap has room.
	MaxFilePatch int
	// Paths limits the patch to these files, or to the files under these folders, relative to
	// the checkout's top. The list of files stays complete. A file named here itself (not a
	// folder that holds it) is asked for by path: its patch comes even when it is generated or
	// larger than MaxFilePatch.
	Paths []string
	// Binary puts binary files in the patch, as git's binary patches (which git apply takes).
	Binary bool
}

// Changes is what a group changed since its base_commit.
type Changes struct {
	Group string `json:"group"`
	// Base is the commit compared against: the group's base_commit; for the main checkout
	// (group ""), its HEAD, or git's empty tree in a repository with no commits.
	Base string `json:"base"`
	// Head is the commit checked out in the group now; "" when there is none.
	Head string `json:"head,omitempty"`
	// Commits are the group's commits since Base, newest first; at most MaxCommits of them.
	Commits []Commit `json:"commits,omitempty"`
	// MoreCommits: there are more commits than Commits holds.
	MoreCommits bool `json:"more_commits,omitempty"`
	// Files is every file changed, committed or not, staged or not, untracked files included
	// (ignored ones not), with renames found.
	Files []File `json:"files"`
	// Patch is the changes as `git diff` prints them, for git apply: every file's own patch
	// that fits under the cap, whole, in Files' order. Files whose patch is not in it say why
	// (File.LeftOut). It holds the files' bytes as they are, UTF-8 or not: encoding/json would
	// replace bytes that are not UTF-8, so a wire that carries it must not go through a JSON
	// string as it is.
	Patch string `json:"patch,omitempty"`
}

// MaxCommits is the most commits Changes lists.
const MaxCommits = 1000

// Commit is one commit of a group.
type Commit struct {
	Hash string `json:"hash"`
	// Subject is the commit message's first line, in UTF-8: bytes in no encoding are U+FFFD.
	Subject string `json:"subject"`
}

// File is one changed file.
type File struct {
	// Path is the file's path from the checkout's top, as git has it (any bytes but NUL).
	Path string `json:"path"`
	// OldPath is where a renamed file was.
	OldPath string `json:"old_path,omitempty"`
	// Status is git's: A added, D deleted, M modified, R renamed, T type changed (a file
	// became a symlink, say).
	Status string `json:"status"`
	// Added and Deleted count lines; both 0 for a binary file.
	Added   int  `json:"added"`
	Deleted int  `json:"deleted"`
	Binary  bool `json:"binary,omitempty"`
	// LeftOut says why the file's patch is not in Changes.Patch, when a patch was asked for:
	// "binary" (ask with Binary), "too large" (ask for it by path, or with a larger cap),
	// "generated" (a lockfile or generated file: ask for it by path), "not asked for" (Paths
	// named other files). The LeftOut… constants.
	LeftOut string `json:"left_out,omitempty"`
}

// Changes computes what group changed since its base_commit: commits, staged, unstaged and
// untracked (not ignored) files. Group "" is the main checkout against its HEAD.
//
// It reads the checkout through a temporary index (a copy of the checkout's own, to which git
// adds every file), so the worker's index and files are never touched, and git runs with
// --no-optional-locks: it does not race the agent working there. Any failure is an error,
// never an empty answer.
func (r *Repo) Changes(ctx context.Context, group string, o ChangesOptions) (Changes, error) {
	c := Changes{Group: group, Files: []File{}}
	dir := r.Top
	var g Group
	if group != "" {
		var err error
		if g, err = r.group(ctx, group); err != nil {
			return Changes{}, err
		}
		if err := r.retiring(g); err != nil {
			return Changes{}, err
		}
		if g.Missing {
			if _, err := os.Lstat(g.admin); err != nil {
				// Listed with its folder gone, and no mark: a Retire ended meanwhile.
				return Changes{}, api.Errorf(api.CodeNotFound, "group %s retired as its changes were asked for: see krad groups", g.Name).WithCause(ErrNotFound)
			}
			return Changes{}, r.folderGone(g)
		}
		dir, c.Base, c.Head = g.Dir, g.BaseCommit, g.Head
	} else {
		head, err := resolveIn(ctx, dir, "HEAD")
		switch {
		case errors.Is(err, ErrNotFound):
			// No commit yet: everything is new.
			out, err := git(ctx, gitRun{dir: dir, stdin: strings.NewReader("")}, "hash-object", "-t", "tree", "--stdin")
			if err != nil {
				return Changes{}, fmt.Errorf("changes of the main checkout: %w", err)
			}
			c.Base = strings.TrimSpace(string(out))
		case err != nil:
			return Changes{}, fmt.Errorf("changes of the main checkout: %w", err)
		default:
			c.Base, c.Head = head, head
		}
	}
	what := "changes of the main checkout"
	if group != "" {
		what = "changes of group " + group
	}
	fail := func(err error) (Changes, error) {
		if group != "" {
			// git failing because the checkout went from under it says less than this.
			if rerr := r.removed(g); rerr != nil {
				return Changes{}, rerr
			}
		}
		return Changes{}, fmt.Errorf("%s: %w", what, err)
	}

	env, done, err := tempIndex(ctx, dir, indexOf(g))
	if err != nil {
		return fail(err)
	}
	defer done()
	if c.Head != "" && c.Head != c.Base {
		if c.Commits, c.MoreCommits, err = commits(ctx, dir, c.Base, c.Head); err != nil {
			return fail(err)
		}
	}
	if c.Files, err = fileList(ctx, dir, c.Base, env); err != nil {
		return fail(err)
	}
	if !o.Stat {
		if c.Patch, err = patch(ctx, dir, c.Base, env, c.Files, o); err != nil {
			return fail(err)
		}
	}
	// The checkout was read whole only if its removal had not begun when the reading ended.
	if group != "" {
		if err := r.removed(g); err != nil {
			return Changes{}, err
		}
	}
	return c, nil
}

// retiring is the error about group g when Retire is removing it (or a Retire stopped while it
// was): its checkout's files may be going one by one, so that what is read of them is not the
// group's work. nil when it is not marked so.
func (r *Repo) retiring(g Group) error {
	if _, err := os.Lstat(r.retiringMark(g.Name)); err == nil {
		return api.Errorf(api.CodeConflict, "group %s is retiring: its checkout is being removed (if no retire is running, one stopped midway: retire the group again)",
			g.Name).WithCause(ErrRetiring)
	}
	return nil
}

// removed is the error about group g, which was there when Changes began, when its removal has
// begun since: nil when what was read of its checkout was whole.
//
// git worktree remove deletes the checkout first, then the admin folder, each a file at a time in
// no set order. Retire's mark (retiringMark) is there from before the removal begins until it has
// ended, so the mark, then the .git file and the record (metaFile), looked at in that order after
// the reading, tell whether the removal had begun before it ended.
func (r *Repo) removed(g Group) error {
	if err := r.retiring(g); err != nil {
		return err
	}
	for _, p := range []string{filepath.Join(g.Dir, ".git"), filepath.Join(g.admin, metaFile)} {
		if _, err := os.Lstat(p); err != nil {
			return api.Errorf(api.CodeNotFound, "group %s retired while its changes were read: see krad groups", g.Name).WithCause(ErrNotFound)
		}
	}
	return nil
}

// folderGone is the error about a group whose folder was deleted from under git.
func (r *Repo) folderGone(g Group) error {
	return api.Errorf(api.CodeConflict, "group %s: its folder %s is gone (deleted from under git); its branch %s and commits are kept: retire the group",
		g.Name, termsafe.Quote(g.Dir), g.Branch).WithCause(ErrFolderGone)
}

// workTree writes the tree of what the checkout at dir holds now, untracked files included and
// ignored ones not, from a temporary index (tempIndex). index is as tempIndex takes it.
func workTree(ctx context.Context, dir, index string) (string, error) {
	env, done, err := tempIndex(ctx, dir, index)
	if err != nil {
		return "", err
	}
	defer done()
	out, err := git(ctx, gitRun{dir: dir, env: env, write: true}, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// tempIndex makes a temporary index that holds what the checkout at dir holds now, untracked
// files included and ignored ones not: a copy of the checkout's own (so that git can tell
// unchanged files by their stat data, without reading them; git add then makes it match the
// files, whatever was staged), or, when it has none, one read from HEAD. The checkout's own
// index is never written. env names the temporary index for git (GIT_INDEX_FILE); done removes
// it. index is the checkout's own index file, when the caller knows it; "" asks git.
func tempIndex(ctx context.Context, dir, index string) (env []string, done func(), err error) {
	own := index
	if own == "" {
		out, err := git(ctx, gitRun{dir: dir}, "rev-parse", "--path-format=absolute", "--git-path", "index")
		if err != nil {
			return nil, nil, err
		}
		own = strings.TrimSpace(string(out))
	}
	tmp, err := os.CreateTemp("", "krad-index-")
	if err != nil {
		return nil, nil, err
	}
	remove := func() {
		os.Remove(tmp.Name() + ".lock")
		os.Remove(tmp.Name())
	}
	defer func() {
		if err != nil {
			remove()
		}
	}()
	env = []string{"GIT_INDEX_FILE=" + tmp.Name()}
	copied, mtime, data, err := copyFile(tmp, own)
	tmp.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("copy the index: %w", err)
	}
	if copied {
		// The copy keeps the index's time. Git takes a file whose recorded time is not older
		// than the index's own for "racily clean": its stat data may match although its content
		// changed (rewritten, same size, in the instant the index was written), so git reads
		// it. A copy with a newer time would make git trust the stat data, and miss the edit,
		// from Changes and from the snapshot Retire keeps.
		if err := os.Chtimes(tmp.Name(), mtime, mtime); err != nil {
			return nil, nil, fmt.Errorf("copy the index: %w", err)
		}
	}
	fresh := func() error {
		if err := os.Truncate(tmp.Name(), 0); err != nil {
			return err
		}
		if _, err := resolveIn(ctx, dir, "HEAD"); err == nil {
			_, err := git(ctx, gitRun{dir: dir, env: env, write: true}, "read-tree", "HEAD")
			return err
		}
		return os.Remove(tmp.Name()) // no commit: start from an empty index
	}
	if !copied {
		if err := fresh(); err != nil {
			return nil, nil, err
		}
	} else if found, ok := anyAssumeUnchanged(data); found || !ok {
		if err := noAssumeUnchanged(ctx, dir, env); err != nil {
			return nil, nil, err
		}
	}
	add := func() error {
		_, err := git(ctx, gitRun{dir: dir, env: env, write: true}, "add", "--all", "--", ":/")
		return err
	}
	if err := add(); err != nil {
		if !copied || ctx.Err() != nil {
			return nil, nil, err
		}
		// The copy may not stand alone (a split index): start again from HEAD.
		if err := fresh(); err != nil {
			return nil, nil, err
		}
		if err := add(); err != nil {
			return nil, nil, err
		}
	}
	return env, remove, nil
}

// indexOf is the index file of group g's checkout: index in its admin folder, where git keeps
// it for a linked worktree (its git dir); "" for the main checkout (g's zero value), or a group
// whose admin folder is not known, for which tempIndex asks git.
func indexOf(g Group) string {
	if g.admin == "" {
		return ""
	}
	return filepath.Join(g.admin, "index")
}

// noAssumeUnchanged clears, in the temporary index, the assume-unchanged bit that a person or
// tool set on files (git update-index --assume-unchanged), with which git add would not see their
// changes. The skip-worktree bit of sparse checkouts stays: those files are absent on purpose.
func noAssumeUnchanged(ctx context.Context, dir string, env []string) error {
	out, err := git(ctx, gitRun{dir: dir, env: env}, "ls-files", "-v", "-z")
	if err != nil {
		return err
	}
	var paths bytes.Buffer
	for _, rec := range bytes.Split(out, []byte{0}) {
		// "h path": a lower-case tag marks an assume-unchanged file.
		if len(rec) > 2 && rec[0] >= 'a' && rec[0] <= 'z' && rec[1] == ' ' {
			paths.Write(rec[2:])
			paths.WriteByte(0)
		}
	}
	if paths.Len() == 0 {
		return nil
	}
	_, err = git(ctx, gitRun{dir: dir, env: env, stdin: &paths, write: true}, "update-index", "--no-assume-unchanged", "-z", "--stdin")
	return err
}

// copyFile copies the file at src into dst and returns src's modification time, and its bytes
// when it is no larger than maxIndexRead (else data is nil); false when there is no file at src.
// The time is that of the file copied (git replaces an index by renaming a new one over it, so the
// open file does not change under the copy).
func copyFile(dst *os.File, src string) (copied bool, mtime time.Time, data []byte, err error) {
	f, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return false, time.Time{}, nil, nil
	}
	if err != nil {
		return false, time.Time{}, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, time.Time{}, nil, err
	}
	if fi.Size() > maxIndexRead {
		if _, err = io.Copy(dst, f); err != nil {
			return false, time.Time{}, nil, err
		}
		return true, fi.ModTime(), nil, nil
	}
	if data, err = io.ReadAll(f); err != nil {
		return false, time.Time{}, nil, err
	}
	if _, err = dst.Write(data); err != nil {
		return false, time.Time{}, nil, err
	}
	return true, fi.ModTime(), data, nil
}

// maxIndexRead is the largest index copyFile keeps in memory, for anyAssumeUnchanged to read: 64
// MiB, an index of some 600,000 files.
const maxIndexRead = 64 << 20

// resolveIn is resolve in the checkout at dir.
func resolveIn(ctx context.Context, dir, rev string) (string, error) {
	return (&Repo{Top: dir}).resolve(ctx, rev)
}

// commits lists the commits of head not in base, newest first.
func commits(ctx context.Context, dir, base, head string) ([]Commit, bool, error) {
	out, err := git(ctx, gitRun{dir: dir}, "log", "-z", "--no-show-signature", "--format=%H %s",
		"--max-count="+strconv.Itoa(MaxCommits+1), "^"+base, head, "--")
	if err != nil {
		return nil, false, err
	}
	var cs []Commit
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		hash, subject, _ := strings.Cut(rec, " ")
		// A subject is for people, and travels as a JSON string: one in no encoding (a commit
		// that declares none) is made UTF-8 here, so that Changes's JSON reads back the same.
		cs = append(cs, Commit{Hash: hash, Subject: strings.ToValidUTF8(subject, "\uFFFD")})
	}
	if len(cs) > MaxCommits {
		return cs[:MaxCommits], true, nil
	}
	return cs, false, nil
}

// diffArgs are the options of every diff: renames found, no program of the repository's config
// run, git's own prefixes.
var diffArgs = []string{"-r", "-M", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/"}

// fileList is every file that differs between the tree base and the index that env names (a
// temporary one: tempIndex), with its line counts. git diff-index --cached reads the index as
// it is, never the files, and compares it with base as diff-tree would compare the index's own
// tree; it spares writing that tree (git write-tree), a tenth or more of a Changes of a large
// repository (BENCHMARKS.md).
func fileList(ctx context.Context, dir, base string, env []string) ([]File, error) {
	args := append([]string{"diff-index", "--cached", "-z", "--raw", "--numstat", "--no-abbrev"}, diffArgs...)
	out, err := git(ctx, gitRun{dir: dir, env: env}, append(args, base, "--")...)
	if err != nil {
		return nil, err
	}
	return parseRawNumstat(out)
}

// parseRawNumstat reads `git diff-index -z --raw --numstat` (diff-tree's is the same): first a
// raw record per file (":mode mode hash hash STATUS\0path\0", two paths for a rename), then a
// numstat record per file in the same order ("added\tdeleted\tpath\0", or
// "added\tdeleted\t\0old\0new\0"; "-" counts for a binary file).
func parseRawNumstat(out []byte) ([]File, error) {
	fields := strings.Split(string(out), "\x00")
	if n := len(fields); n > 0 && fields[n-1] == "" {
		fields = fields[:n-1]
	}
	bad := func(why string) error {
		return fmt.Errorf("git diff-index's output does not read: %s", why)
	}
	files := []File{}
	i := 0
	for ; i < len(fields) && strings.HasPrefix(fields[i], ":"); i++ {
		words := strings.Fields(fields[i])
		if len(words) != 5 || words[4] == "" {
			return nil, bad("a raw record with other than 5 words")
		}
		f := File{Status: words[4][:1]}
		switch f.Status {
		case "R", "C":
			if i+2 >= len(fields) {
				return nil, bad("a rename without its two paths")
			}
			f.OldPath, f.Path = fields[i+1], fields[i+2]
			i += 2
		default:
			if i+1 >= len(fields) {
				return nil, bad("a raw record without its path")
			}
			f.Path = fields[i+1]
			i++
		}
		files = append(files, f)
	}
	for k := range files {
		if i >= len(fields) {
			return nil, bad("fewer numstat records than files")
		}
		counts := strings.SplitN(fields[i], "\t", 3)
		if len(counts) != 3 {
			return nil, bad("a numstat record without two tabs")
		}
		f := &files[k]
		if counts[0] == "-" && counts[1] == "-" {
			f.Binary = true
		} else {
			a, err1 := strconv.Atoi(counts[0])
			d, err2 := strconv.Atoi(counts[1])
			if err1 != nil || err2 != nil {
				return nil, bad("a numstat count that is not a number")
			}
			f.Added, f.Deleted = a, d
		}
		path := counts[2]
		if path == "" { // a rename: old and new follow
			if i+2 >= len(fields) {
				return nil, bad("a numstat rename without its two paths")
			}
			path = fields[i+2]
			i += 2
		}
		if path != f.Path {
			return nil, bad("the numstat records are not in the raw records' order")
		}
		i++
	}
	if i != len(fields) {
		return nil, bad("more numstat records than files")
	}
	return files, nil
}

// patch is the patch between base and the index env names of the files asked for, each file's
// whole or not at all, within the caps; it marks files[i].LeftOut for the others.
func patch(ctx context.Context, dir, base string, env []string, files []File, o ChangesOptions) (string, error) {
	want, pathspecs := asked(files, o.Paths)
	if len(want) == 0 {
		return "", nil
	}
	generated, err := generatedFiles(ctx, dir, files, want)
	if err != nil {
		return "", err
	}
	args := append([]string{"--literal-pathspecs", "diff-index", "--cached", "-p", "--full-index"}, diffArgs...)
	if o.Binary {
		args = append(args, "--binary")
	}
	args = append(args, base, "--")
	if len(o.Paths) > 0 {
		args = append(args, pathspecs...)
	}
	c := newPatchCut(files, want, generated, o)
	err = gitLines(ctx, gitRun{dir: dir, env: env}, args, c.line)
	c.finish()
	if err != nil {
		return "", err
	}
	if err := c.complete(); err != nil {
		return "", err
	}
	return c.out.String(), nil
}

// asked is the files paths asks for (all of them, when it names none), as indexes into files in
// git's order, and the pathspecs that ask git for exactly those; it marks the others
// LeftOutNotAsked.
func asked(files []File, paths []string) (want []int, pathspecs []string) {
	for i := range files {
		f := &files[i]
		if len(paths) > 0 && !under(f.Path, paths) && (f.OldPath == "" || !under(f.OldPath, paths)) {
			f.LeftOut = LeftOutNotAsked
			continue
		}
		want = append(want, i)
		pathspecs = append(pathspecs, f.Path)
		if f.OldPath != "" {
			pathspecs = append(pathspecs, f.OldPath)
		}
	}
	return want, pathspecs
}

// gitLines runs git with args, its output read by line: each piece of it, a whole line or, for a
// line longer than the reader's buffer, a part of one, to line, with whether the piece starts a
// line. It returns git's error, or the read's.
func gitLines(ctx context.Context, run gitRun, args []string, line func(chunk []byte, lineStart bool)) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	run.stdout = pw
	go func() {
		_, err := git(ctx, run, args...)
		pw.CloseWithError(err)
		done <- err
	}()
	br := bufio.NewReaderSize(pr, 64<<10)
	lineStart := true
	var readErr error
	for {
		chunk, err := br.ReadSlice('\n')
		line(chunk, lineStart)
		lineStart = err == nil
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
	}
	pr.Close()
	if err := <-done; err != nil {
		return err
	}
	return readErr
}

// patchCut cuts git's patch of the files asked for into each file's patch, and keeps each whole
// or leaves it out: a binary file's unless asked for, a generated one's unless named, one past
// the caps.
//
// Each file's patch starts with a line "diff --git "; no line inside one can (they start with a
// space, +, -, @, \ or a header word, and a binary patch's lines hold no space). A type change
// (a file that became a symlink) is two patches: the old one deleted, the new one added.
type patchCut struct {
	files     []File
	want      []int  // the files asked for, in git's order
	generated []bool // by index into want
	o         ChangesOptions
	max       int // the most bytes of the whole patch
	fileMax   int // the most bytes of a file's patch, unless the file is named

	out      strings.Builder
	cur      int // index into want of the file whose patch is being read
	part     int // which of that file's patches
	section  bytes.Buffer
	leftOut  string // why the current file's patch is left out, once known: it is being skipped
	limit    int    // the most bytes the current file's patch may have
	sections int    // the patches git gave
}

func newPatchCut(files []File, want []int, generated []bool, o ChangesOptions) *patchCut {
	max := o.MaxPatch
	if max <= 0 {
		max = DefaultMaxPatch
	}
	fileMax := o.MaxFilePatch
	if fileMax <= 0 {
		fileMax = DefaultMaxFilePatch
	}
	return &patchCut{files: files, want: want, generated: generated, o: o, max: min(max, MaxMaxPatch), fileMax: fileMax, cur: -1}
}

// line takes the next piece of git's patch (gitLines).
func (c *patchCut) line(chunk []byte, lineStart bool) {
	if lineStart && bytes.HasPrefix(chunk, []byte("diff --git ")) {
		c.sections++
		if c.cur >= 0 && c.cur < len(c.want) && c.files[c.want[c.cur]].Status == "T" && c.part == 0 {
			c.part = 1 // the second half of a type change
		} else {
			c.finish()
			c.cur++
			c.part = 0
			c.begin()
		}
	}
	if c.leftOut == "" && c.cur >= 0 {
		if c.section.Len()+len(chunk) > c.limit {
			c.leftOut = LeftOutTooLarge
			c.section.Reset()
		} else {
			c.section.Write(chunk)
		}
	}
}

// begin starts the current file's patch: whether it is left out from the start, and its cap.
func (c *patchCut) begin() {
	if c.cur >= len(c.want) {
		return // more patches than files: counted, and an error in complete
	}
	f := &c.files[c.want[c.cur]]
	asked := named(f, c.o.Paths)
	switch {
	case f.Binary && !c.o.Binary:
		c.leftOut = LeftOutBinary
	case c.generated[c.cur] && !asked:
		c.leftOut = LeftOutGenerated
	}
	c.limit = c.max - c.out.Len()
	if !asked {
		c.limit = min(c.limit, c.fileMax)
	}
}

// finish keeps the current file's patch, or marks why it is left out.
func (c *patchCut) finish() {
	if c.cur < 0 || c.cur >= len(c.want) {
		return
	}
	if c.leftOut == "" {
		c.out.Write(c.section.Bytes())
	}
	c.files[c.want[c.cur]].LeftOut = c.leftOut
	c.section.Reset()
	c.leftOut = ""
}

// complete checks that git gave a patch for each file asked for (two for a type change), no more.
func (c *patchCut) complete() error {
	expected := 0
	for _, i := range c.want {
		expected++
		if c.files[i].Status == "T" {
			expected++
		}
	}
	if c.sections != expected || c.cur != len(c.want)-1 {
		return fmt.Errorf("git's patch has %d files' patches, its list %d: they disagree", c.sections, expected)
	}
	return nil
}

// named says whether paths names f itself (its path, or the one it was renamed from), rather than
// a folder that holds it: such a file is asked for by path, and gets its patch even when it is
// generated or larger than the per-file cap.
func named(f *File, paths []string) bool {
	return slices.Contains(paths, f.Path) || f.OldPath != "" && slices.Contains(paths, f.OldPath)
}

// under says whether path is one of paths or in a folder of them.
func under(path string, paths []string) bool {
	for _, p := range paths {
		p = strings.TrimSuffix(p, "/")
		if p == "" || p == "." || path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}
