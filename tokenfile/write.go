package tokenfile

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/remote/shell"
)

// Host runs commands on an SSH host: remote.SSH gives one over an *ssh.Client (remote.Host has
// the same method). Run runs command with stdin as its standard input and returns its stdout; when
// the command exits non-zero, the error says so, with its stderr, and stdout is still returned.
type Host interface {
	Run(ctx context.Context, command string, stdin io.Reader) (stdout []byte, err error)
}

// Write writes tok to ~/.krad-ade/run/<instance>/token on the host and returns the file's
// absolute path, for KRAD_ADE_TOKEN_FILE. instance names the app instance: the same instance gets
// the same path each time, and a new Write replaces the token in it atomically, so terminals that
// outlive the app's restart read the new token from the same path.
//
// The token travels on the session's stdin, never in a command line or an environment. On the host
// one sh script, with umask 077, enters ~/.krad-ade, run and <instance> (creating what is missing,
// refusing symbolic links, non-folders and other users' folders with a *shell.RefusedError, making
// its own folders 0700), writes stdin to a new temporary file in the instance's folder, checks that
// the whole token arrived, and renames the file over token. See the package documentation.
//
// Its errors start "write the token file: ", and say no more of where: h's own errors say
// whether the command ran on a host or on this computer.
func Write(ctx context.Context, h Host, instance string, tok api.Token) (path string, err error) {
	step, err := WriteStep(instance, tok)
	if err != nil {
		return "", err
	}
	out, err := h.Run(ctx, step.Script.Command(step.Args...), step.Stdin)
	rep, err := writeScript.Result(out, err)
	return ReadWrite(instance, rep, err)
}

// WriteStep is Write's command as a step of a [shell.Batch], the token on its stdin; [ReadWrite]
// reads its result. Its errors are Write's.
func WriteStep(instance string, tok api.Token) (shell.Step, error) {
	if err := checkInstance(instance); err != nil {
		return shell.Step{}, fmt.Errorf("write the token file: %w", err)
	}
	if tok.IsZero() {
		return shell.Step{}, errors.New("write the token file: no token")
	}
	content := tok.Reveal() + "\n" // the one reveal: onto the session's stdin
	return shell.Step{Script: writeScript, Args: []string{instance, strconv.Itoa(len(content))}, Stdin: strings.NewReader(content), Folders: folders(instance)}, nil
}

// ReadWrite reads the result of [WriteStep] for instance: the token file's absolute path.
func ReadWrite(instance string, rep []string, err error) (path string, _ error) {
	if err != nil {
		return "", fmt.Errorf("write the token file: %w", err)
	}
	if len(rep) != 1 || !isTokenPath(rep[0], instance) {
		return "", fmt.Errorf("write the token file: the host reported %q, not the file's absolute path", termsafe.Shorten(strings.Join(rep, "\n"), maxShown))
	}
	return rep[0], nil
}

// Check looks at the token file of instance on the host ([CheckStep]): its absolute path, and
// whether it holds tok, owner-only. Nothing is sent to the host but the instance's name.
func Check(ctx context.Context, h Host, instance string, tok api.Token) (path string, holds bool, err error) {
	step, err := CheckStep(instance)
	if err != nil {
		return "", false, err
	}
	out, err := h.Run(ctx, step.Script.Command(step.Args...), nil)
	rep, err := checkScript.Result(out, err)
	return ReadCheck(instance, tok, rep, err)
}

// CheckStep is a step of a [shell.Batch] that looks at the token file of instance on the host
// without sending anything there, so that a reconnect whose file still holds the token need not
// write it again (which takes an SSH exec of its own, the token on its stdin). It enters the
// folders as [Write] does (making them if missing, refusing what Write refuses) and reports the
// file's absolute path and the SHA-256 of what it holds, only when the file is a regular file of
// the user's, mode 0600, with no ACL; else "stale". [ReadCheck] reads its result.
func CheckStep(instance string) (shell.Step, error) {
	if err := checkInstance(instance); err != nil {
		return shell.Step{}, fmt.Errorf("look at the token file: %w", err)
	}
	return shell.Step{Script: checkScript, Args: []string{instance}, Folders: folders(instance)}, nil
}

// folders are the folders under the home that the token file's scripts enter, for
// [shell.Step.Folders].
func folders(instance string) []string {
	return []string{".krad-ade", ".krad-ade/run", ".krad-ade/run/" + instance}
}

// ReadCheck reads the result of [CheckStep] for instance: the token file's absolute path, and
// whether the file holds tok as [Write] writes it (compared in constant time). A file that does
// not, or that is not owner-only, is not an error: it is to be written ([WriteStep]).
func ReadCheck(instance string, tok api.Token, rep []string, err error) (path string, holds bool, _ error) {
	if err != nil {
		return "", false, fmt.Errorf("look at the token file: %w", err)
	}
	if len(rep) == 1 && rep[0] == "stale" {
		return "", false, nil
	}
	if len(rep) != 2 || !isTokenPath(rep[0], instance) {
		return "", false, fmt.Errorf("look at the token file: the host reported %q, not the file's absolute path and digest", termsafe.Shorten(strings.Join(rep, "\n"), maxShown))
	}
	if tok.IsZero() {
		return "", false, errors.New("look at the token file: no token")
	}
	want := sha256.Sum256([]byte(tok.Reveal() + "\n"))
	got, err := hex.DecodeString(rep[1])
	if err != nil || len(got) != len(want) {
		return "", false, fmt.Errorf("look at the token file: the host reported %q, not a SHA-256", termsafe.Shorten(rep[1], maxShown))
	}
	return rep[0], subtle.ConstantTimeCompare(got, want[:]) == 1, nil
}

// Remove removes the token file at path, as Write returned it, from the host: only a path in the
// host's ~/.krad-ade/run/<instance>/, and only a regular file of the user's. A file that is already
// gone is no error.
func Remove(ctx context.Context, h Host, path string) error {
	instance, ok := instanceOf(path)
	if !ok {
		return fmt.Errorf("remove the token file %q: not a path Write returns (…/.krad-ade/run/<instance>/token)", termsafe.Shorten(path, maxShown))
	}
	out, err := h.Run(ctx, removeScript.Command(instance, path), nil)
	rep, err := removeScript.Result(out, err)
	if err != nil {
		return fmt.Errorf("remove the token file %q: %w", path, err)
	}
	if len(rep) != 1 || (rep[0] != "removed" && rep[0] != "absent") {
		return fmt.Errorf("remove the token file %q: the host reported %q", path, termsafe.Shorten(strings.Join(rep, "\n"), maxShown))
	}
	return nil
}

// ErrInstance says that an instance name is not a short name of lowercase letters, digits and
// dashes.
var ErrInstance = errors.New("an instance is 1 to 63 lowercase letters, digits and dashes, starting with a letter or digit")

func checkInstance(s string) error {
	ok := s != "" && len(s) <= 63 && s[0] != '-'
	for _, r := range s {
		ok = ok && ('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-')
	}
	if !ok {
		return ErrInstance
	}
	return nil
}

// isTokenPath says whether p is an absolute path, without control characters, of the token file of
// instance.
func isTokenPath(p, instance string) bool {
	i, ok := instanceOf(p)
	return ok && i == instance
}

// instanceOf returns the instance of a token file's path: /…/.krad-ade/run/<instance>/token.
func instanceOf(p string) (string, bool) {
	if !path.IsAbs(p) || path.Clean(p) != p || strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return "", false
	}
	dir, file := path.Split(p)
	if file != "token" {
		return "", false
	}
	run, instance := path.Split(path.Clean(dir))
	if !strings.HasSuffix(run, "/.krad-ade/run/") || checkInstance(instance) != nil {
		return "", false
	}
	return instance, true
}

// maxShown is how much of something from the host an error message shows.
const maxShown = 200

// writeScript ($1 instance, $2 the size of the content; the content on stdin) reports the token
// file's absolute path.
var writeScript = shell.Script{
	Name: "TOKENFILE",
	Body: `
umask 077;
krad_home;
krad_enters "~" .krad-ade run "$1";
if [ -L token ]; then krad_refuse symlink "~/.krad-ade/run/$1/token"; fi;
if [ -e token ] && [ ! -f token ]; then krad_refuse notfile "~/.krad-ade/run/$1/token"; fi;
t=.token.$$.tmp;
trap 'rm -f "$t"' EXIT; trap 'exit 1' HUP INT TERM PIPE;
rm -f "$t";
set -C;
cat > "$t" || krad_fail "write the token to a temporary file";
set +C;
if [ -L "$t" ] || [ ! -f "$t" ] || [ ! -O "$t" ]; then krad_refuse notfile "~/.krad-ade/run/$1/$t"; fi;
n=$(wc -c < "$t");
if [ $n -eq "$2" ]; then :; else krad_fail "write the token: $n bytes of $2 arrived"; fi;
chmod 600 "$t" || krad_fail "make the token file owner-only";
mv -f "$t" token || krad_fail "rename the token file into place";
krad_say ok "$PWD/token";
`,
}

// removeScript ($1 instance, $2 the path Write returned) reports "removed", or "absent" when there
// is no token file.
var removeScript = shell.Script{
	Name: "TOKENFILE",
	Body: `
krad_home;
if [ ! -e ".krad-ade/run/$1/token" ] && [ ! -L ".krad-ade/run/$1/token" ]; then krad_say ok absent; exit 0; fi;
krad_enters "~" .krad-ade run "$1";
if [ "$PWD/token" != "$2" ]; then krad_refuse elsewhere "$2"; fi;
if [ -L token ]; then krad_refuse symlink "~/.krad-ade/run/$1/token"; fi;
if [ ! -f token ]; then krad_refuse notfile "~/.krad-ade/run/$1/token"; fi;
if [ ! -O token ]; then krad_refuse owner "~/.krad-ade/run/$1/token"; fi;
rm -f token || krad_fail "remove the token file";
krad_say ok removed;
`,
}

// checkScript ($1 instance) reports the token file's absolute path and the SHA-256 of its
// content, or "stale": no such file, not a regular file of the user's, or not mode 0600 exactly
// (ls shows an ACL as a "+" after the mode, an SELinux context as a ".").
var checkScript = shell.Script{
	Name: "TOKENCHECK",
	Body: shell.SHA256 + `
umask 077;
krad_home;
krad_enters "~" .krad-ade run "$1";
if [ -L token ] || [ ! -f token ] || [ ! -O token ]; then krad_say ok stale; exit 0; fi;
case "$(ls -ln token 2>/dev/null)" in "-rw------- "*|"-rw-------. "*) ;; *) krad_say ok stale; exit 0;; esac;
h=$(krad_sha token) || krad_fail "hash the token file";
krad_say ok "$PWD/token" "$h";
`,
}
