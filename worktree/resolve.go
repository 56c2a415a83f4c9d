package worktree

import (
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/krad-ade/krad/api"
)

// OpResolve resolves paths where they are, on this computer or the SSH host: Code's check that a
// file is in the caller's environment folder or group reads the paths as the host's filesystem
// has them, with every symlink followed, so that a link out of the folder is seen for what it is.
// It needs no repository: Dir and Root are not read.
const OpResolve = "resolve"

// MaxResolve is how many paths one OpResolve resolves.
const MaxResolve = 16

// ResolveOptions are OpResolve's: the paths, each absolute.
type ResolveOptions struct {
	Paths []string `json:"paths"`
}

// Resolved is what OpResolve answers: for each path, in order, its resolution (absolute, every
// symlink followed); a path that does not exist is resolved through its folder (an editor may
// make the file), and is "" when its folder cannot be resolved either, or when its resolution
// is not UTF-8 (JSON would carry another path).
type Resolved struct {
	Paths []string `json:"paths"`
}

func resolveOp(op Op) (Result, error) {
	if op.Resolve == nil || len(op.Resolve.Paths) == 0 || len(op.Resolve.Paths) > MaxResolve {
		return Result{}, api.Errorf(api.CodeBadRequest, "a resolve operation needs 1 to %d paths", MaxResolve)
	}
	out := make([]string, len(op.Resolve.Paths))
	for i, p := range op.Resolve.Paths {
		if !strings.HasPrefix(p, "/") || strings.IndexByte(p, 0) >= 0 {
			return Result{}, api.Errorf(api.CodeBadRequest, "a resolve operation's paths must be absolute, without a NUL byte")
		}
		out[i] = resolvePath(p)
	}
	return Result{Resolved: &Resolved{Paths: out}}, nil
}

// resolvePath is p with every symlink resolved, through its folder when p does not exist; "" when
// neither resolves. A ".." is taken as the kernel takes it, after the symlink before it (not
// cleaned away first: /a/link/.. is the parent of link's target, not /a).
func resolvePath(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		i := strings.LastIndexByte(p, '/')
		dir, base := p[:i+1], p[i+1:]
		if base == "" || base == "." || base == ".." {
			return ""
		}
		if dir, err = filepath.EvalSymlinks(dir); err != nil {
			return ""
		}
		r = filepath.Join(dir, base)
	}
	if !utf8.ValidString(r) {
		return ""
	}
	return r
}
