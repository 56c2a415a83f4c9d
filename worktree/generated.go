package worktree

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"
)

// lockfiles are the names of the lockfiles that package managers write, matched at any depth of
// the checkout. Their patches are long, written by a program, and reviewed by no one: Changes
// lists them with their line counts but leaves their patch out ("generated") unless it is asked
// for by path, so that they do not push the work a person wrote out of a capped answer.
//
// The list: npm (package-lock.json, npm-shrinkwrap.json), Yarn (yarn.lock), pnpm
// (pnpm-lock.yaml), Bun (bun.lockb, bun.lock), Deno (deno.lock), Go (go.sum, go.work.sum), Cargo
// (Cargo.lock), Poetry (poetry.lock), Pipenv (Pipfile.lock), PDM (pdm.lock), uv (uv.lock), pixi
// (pixi.lock), Bundler (Gemfile.lock), Composer (composer.lock), Mix (mix.lock), Dart and Flutter
// (pubspec.lock), Swift Package Manager (Package.resolved), CocoaPods (Podfile.lock), Carthage
// (Cartfile.resolved), NuGet (packages.lock.json), Paket (paket.lock), Gradle
// (gradle.lockfile), Nix flakes (flake.lock), Terraform (.terraform.lock.hcl), Stack
// (stack.yaml.lock), rebar3 (rebar.lock), Shards (shard.lock), Conan (conan.lock).
var lockfiles = []string{
	"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
	"bun.lock", "deno.lock", "go.sum", "go.work.sum", "Cargo.lock", "poetry.lock",
	"Pipfile.lock", "pdm.lock", "uv.lock", "pixi.lock", "Gemfile.lock", "composer.lock",
	"mix.lock", "pubspec.lock", "Package.resolved", "Podfile.lock", "Cartfile.resolved",
	"packages.lock.json", "paket.lock", "gradle.lockfile", "flake.lock", ".terraform.lock.hcl",
	"stack.yaml.lock", "rebar.lock", "shard.lock", "conan.lock",
}

// generatedAttr is the git attribute that marks generated files: GitHub's Linguist reads it to
// collapse them in its diffs, so repositories already set it (in .gitattributes, say
// `*.pb.go linguist-generated`).
const generatedAttr = "linguist-generated"

// isGenerated says whether the file at p (as git has it, from the checkout's top) is generated,
// given the value git reports for its generatedAttr (`git check-attr`: "set", "unset",
// "unspecified" or the value given). The repository decides first: the attribute set or true
// makes any file generated, unset or false makes none (a lockfile the repository wants reviewed,
// say). Otherwise a file is generated when its name is one of lockfiles.
func isGenerated(p, attr string) bool {
	switch attr {
	case "set", "true":
		return true
	case "unset", "false":
		return false
	}
	base := path.Base(p)
	for _, name := range lockfiles {
		if base == name {
			return true
		}
	}
	return false
}

// generatedFiles says, for each of files[want], whether it is generated (isGenerated). The
// attribute is asked of git (`git check-attr`), which reads the repository's gitattributes the
// way git itself applies them (every .gitattributes file, $GIT_DIR/info/attributes, the user's),
// in the checkout at dir as it is now; the paths go on stdin, so any bytes but NUL are taken.
func generatedFiles(ctx context.Context, dir string, files []File, want []int) ([]bool, error) {
	var in bytes.Buffer
	for _, i := range want {
		in.WriteString(files[i].Path)
		in.WriteByte(0)
	}
	out, err := git(ctx, gitRun{dir: dir, stdin: &in}, "check-attr", "-z", "--stdin", generatedAttr)
	if err != nil {
		return nil, fmt.Errorf("read the attribute %s: %w", generatedAttr, err)
	}
	attrs, err := parseCheckAttr(out)
	if err != nil {
		return nil, err
	}
	if len(attrs) != len(want) {
		return nil, fmt.Errorf("git check-attr answered for %d files, asked for %d", len(attrs), len(want))
	}
	gen := make([]bool, len(want))
	for k, i := range want {
		if attrs[k].path != files[i].Path || attrs[k].attr != generatedAttr {
			return nil, fmt.Errorf("git check-attr's answers are not in the order of its questions")
		}
		gen[k] = isGenerated(attrs[k].path, attrs[k].value)
	}
	return gen, nil
}

// checkAttr is one answer of `git check-attr`.
type checkAttr struct{ path, attr, value string }

// parseCheckAttr reads `git check-attr -z`: three NUL-ended fields per answer, the path, the
// attribute and its value.
func parseCheckAttr(out []byte) ([]checkAttr, error) {
	if len(out) == 0 {
		return []checkAttr{}, nil
	}
	if out[len(out)-1] != 0 {
		return nil, fmt.Errorf("git check-attr's output does not read: it does not end with a NUL")
	}
	fields := strings.Split(string(out[:len(out)-1]), "\x00")
	if len(fields)%3 != 0 {
		return nil, fmt.Errorf("git check-attr's output does not read: %d fields, not a multiple of 3", len(fields))
	}
	attrs := make([]checkAttr, 0, len(fields)/3)
	for i := 0; i < len(fields); i += 3 {
		attrs = append(attrs, checkAttr{path: fields[i], attr: fields[i+1], value: fields[i+2]})
	}
	return attrs, nil
}
