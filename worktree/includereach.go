package worktree

import (
	"path"
	"strings"
)

// A folder the repository ignores whole (a pattern of its own names the folder: node_modules/,
// dist/, .venv/) can hold more files than the rest of the checkout, and git does not open it to
// say that it is ignored. The include step does not open it either, unless a pattern of the list
// reaches into it by name:
//
//   - a pattern with a folder in it whose leading folders lead into the folder, or out of it
//     (data/fixtures/*.txt and data/ reach data/fixtures/; one that starts with a wildcard
//     folder, */x, reaches every folder);
//   - a pattern with no folder in it that names the folder or a folder above it (node_modules,
//     fixtures/, *.d).
//
// A pattern with no folder in it that names files (.env, *.local, **/.env) matches them at any
// depth elsewhere, but alone does not make the include step look through such a folder: its
// files belong to what made the folder (npm, a build), and a copy of node_modules/pkg/.env
// without the rest would only make a new checkout's node_modules look installed. Once a folder
// is looked into, git matches every pattern in it, as everywhere else.

// includeReach is what the patterns of an include list reach in the folders the repository
// ignores whole.
type includeReach struct {
	// names are the patterns with no folder in them, for path.Match against one folder's name.
	names []string
	// leads are the patterns' leading literal folders ("data/fixtures"), each ending in "/";
	// "/" alone: a pattern whose first folder is a wildcard, which leads anywhere.
	leads []string
}

// parseReach reads the include list (gitignore's format). Where it cannot tell what a pattern
// names, it takes the pattern to reach every folder: the include step then looks, and git alone
// decides what matches.
func parseReach(list []byte) includeReach {
	var ir includeReach
	for line := range strings.SplitSeq(string(list), "\n") {
		p := strings.TrimSuffix(line, "\r")
		if !strings.HasSuffix(p, `\ `) {
			p = strings.TrimRight(p, " ")
		}
		if p == "" || p[0] == '#' || p[0] == '!' { // a negation only takes files away
			continue
		}
		p = strings.TrimRight(p, "/")
		if p == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(p, "**/"); ok && !strings.Contains(rest, "/") {
			p = rest // **/x is x at any depth
		}
		if !strings.Contains(p, "/") {
			ir.names = append(ir.names, p)
			continue
		}
		var lead strings.Builder
		for part := range strings.SplitSeq(strings.TrimPrefix(p, "/"), "/") {
			if part == "" || strings.ContainsAny(part, `*?[\`) {
				break
			}
			lead.WriteString(part)
			lead.WriteByte('/')
		}
		if lead.Len() == 0 {
			ir.leads = append(ir.leads, "/")
		} else {
			ir.leads = append(ir.leads, lead.String())
		}
	}
	return ir
}

// reaches says whether a pattern may match a file in folder dir (relative to the main checkout,
// ending in "/"). Case is ignored, as git ignores it under core.ignoreCase.
func (ir includeReach) reaches(dir string) bool {
	lower := strings.ToLower(dir)
	for _, l := range ir.leads {
		if l = strings.ToLower(l); l == "/" || strings.HasPrefix(lower, l) || strings.HasPrefix(l, lower) {
			return true
		}
	}
	if len(ir.names) == 0 {
		return false
	}
	for part := range strings.SplitSeq(strings.TrimSuffix(dir, "/"), "/") {
		for _, n := range ir.names {
			if nameMatches(n, part) {
				return true
			}
		}
	}
	return false
}

// nameMatches says whether gitignore's pattern p, which has no folder in it, may match name: as
// path.Match does, with git's [!…] for [^…], and true where path.Match cannot read the pattern
// (a character class such as [[:alpha:]]). Case is ignored, as git ignores it under
// core.ignoreCase.
func nameMatches(p, name string) bool {
	if strings.Contains(p, "[:") { // path.Match reads [[:alpha:]] as another class
		return true
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			i++
			b.WriteByte(p[i])
		case c == '[' && i+1 < len(p) && p[i+1] == '!':
			b.WriteString("[^")
			i++
		default:
			b.WriteByte(c)
		}
	}
	ok, err := path.Match(strings.ToLower(b.String()), strings.ToLower(name))
	return ok || err != nil
}
