package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's top folder, from this package's.
const repoRoot = "../../.."

// docFiles are the Markdown pages a person reads: README.md, BENCHMARKS.md, docs/ and its
// folders.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "BENCHMARKS.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	mdLink     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	mdHead     = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
	fence      = regexp.MustCompile("(?ms)^```[^\n]*\n(.*?)^```")
	codeSpan   = regexp.MustCompile("`([^`\n]+)`")
	// invoked is a command line of one of the programs (a line of code that starts with it, after
	// a shell's "$ "), its words up to the first that is not a command's name (a flag, a target,
	// a placeholder).
	invoked = regexp.MustCompile(`(?m)^\s*(?:\$ )?(krad-ade-agents|krad)((?: [a-z][a-z-]*)+)`)
	script  = regexp.MustCompile(`(?:^|\s)\./(scripts/[A-Za-z0-9_.-]+|\.ci/[A-Za-z0-9_.-]+)`)
)

// slug is GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces
// made -.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors of a page's headings, GitHub's way (a repeated one gets -1, -2…).
func anchors(text string) map[string]bool {
	text = fence.ReplaceAllString(text, "")
	seen := map[string]int{}
	out := map[string]bool{}
	for _, m := range mdHead.FindAllStringSubmatch(text, -1) {
		h := strings.NewReplacer("`", "", "*", "").Replace(m[1])
		h = mdLinkText.ReplaceAllString(h, "$1")
		s := slug(h)
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestDocsLinks: every link of the README, BENCHMARKS.md and docs/ to a page or a file of the
// repository reaches one that exists, and a link to a heading (#anchor) reaches a heading there.
func TestDocsLinks(t *testing.T) {
	pages := map[string]map[string]bool{} // a page's anchors, by its clean path
	read := func(path string) (string, bool) {
		b, err := os.ReadFile(path)
		return string(b), err == nil
	}
	links := 0
	for _, file := range docFiles(t) {
		text, _ := read(file)
		body := fence.ReplaceAllString(text, "")
		for _, m := range mdLink.FindAllStringSubmatch(body, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			dest := filepath.Clean(filepath.Join(filepath.Dir(file), path))
			if path == "" {
				dest = file
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s links to %s, which does not exist", file, target)
				continue
			}
			if anchor == "" {
				continue
			}
			as, ok := pages[dest]
			if !ok {
				page, _ := read(dest)
				as = anchors(page)
				pages[dest] = as
			}
			if !as[anchor] {
				t.Errorf("%s links to %s: no heading of %s has the anchor #%s", file, target, dest, anchor)
			}
		}
	}
	if links < 20 {
		t.Errorf("found %d links in the docs: the pattern no longer finds them", links)
	}
}

// TestDocsCommands: every command line the docs show (in code, fenced or inline) names commands
// krad and krad-ade-agents have, and every script they run is in the repository, executable.
func TestDocsCommands(t *testing.T) {
	roots := map[string]*command{"krad": kradCommand(), agentsName: agentsCommand()}
	seen := 0
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		var code []string
		for _, m := range fence.FindAllStringSubmatch(text, -1) {
			code = append(code, m[1])
		}
		for _, m := range codeSpan.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
			code = append(code, m[1])
		}
		for _, c := range code {
			for _, m := range invoked.FindAllStringSubmatch(c, -1) {
				cmd := roots[m[1]]
				words := strings.Fields(m[2])
				if sub := cmd.sub(words[0]); sub == nil {
					t.Errorf("%s shows `%s %s`: %s has no command %q", file, m[1], strings.Join(words, " "), m[1], words[0])
					continue
				}
				seen++
			}
			for _, m := range script.FindAllStringSubmatch(c, -1) {
				fi, err := os.Stat(filepath.Join(repoRoot, m[1]))
				if err != nil || fi.Mode()&0o111 == 0 {
					t.Errorf("%s runs ./%s, which is not an executable file of the repository (%v)", file, m[1], err)
				}
			}
		}
	}
	if seen < 20 {
		t.Errorf("found %d command lines in the docs: the pattern no longer finds them", seen)
	}
}
