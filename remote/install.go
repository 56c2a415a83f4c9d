package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/remote/shell"
)

// Binary is a static krad to install on hosts of one platform.
type Binary struct {
	Platform Platform
	// Version names the folder it is installed in, ~/.krad-ade/bin/<Version>, and is what the
	// binary must print as its version. Letters, digits and . _ + -.
	Version string
	Content io.ReaderAt
	Size    int64
	// SHA256 is the lowercase hex SHA-256 of the content; the host checks its copy against it.
	SHA256 string
}

// ReadBinary reads the static krad for p from the file at path (see [Platform.StaticName]), and
// checks that it is a static ELF executable for p.
func ReadBinary(path string, p Platform, version string) (Binary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Binary{}, fmt.Errorf("read the static krad: %w", err)
	}
	if err := checkELF(b, p); err != nil {
		return Binary{}, fmt.Errorf("static krad %q: %w", path, err)
	}
	sum := sha256.Sum256(b)
	return Binary{Platform: p, Version: version, Content: bytes.NewReader(b), Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}, nil
}

// checkELF checks that b is a static executable for p: a binary for another processor would not
// run there, and one that needs a C library may find none, or another.
func checkELF(b []byte, p Platform) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Arch]
	if p.OS != "linux" || want == elf.EM_NONE {
		return &UnsupportedError{System: p.OS, Machine: p.Arch}
	}
	if f.Machine != want || f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB {
		return fmt.Errorf("built for %s, not for %s", f.Machine, p)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("not an executable (%s)", f.Type)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return errors.New("not static: it names a dynamic loader (build it with CGO_ENABLED=0)")
		}
	}
	return nil
}

// ErrNoexec says that the host does not let programs in ~/.krad-ade run: its filesystem is
// mounted noexec.
var ErrNoexec = errors.New("the filesystem of ~/.krad-ade is mounted noexec, so krad cannot run there: ask for a home that allows programs, or a mount without noexec")

// Install puts b on the host as krad, krad-ade-agents and krad-ade-askpass (one file under three
// names: the CLI, the agents' companion and git's askpass) in
// ~/.krad-ade/bin/<version>/, and returns that folder's absolute path, for PATH. When the folder
// already holds all three with b's SHA-256, nothing is copied. Otherwise the binary goes over on the
// session's stdin into a temporary file in that folder, is checked by size and SHA-256 on the
// host, made executable, run once (krad version --json), and only then renamed into place, so a
// cut or corrupt copy never takes the place of a good one. Either way the installed krad is run
// and must print b.Version: a home mounted noexec is [ErrNoexec].
//
// Install is [LookStep] run alone, then [InstallFound]: a connect runs the look in a batch with
// its other steps, and copies the binary only when the look did not find it.
func Install(ctx context.Context, h Host, b Binary) (dir string, err error) {
	if err := b.check(); err != nil {
		return "", fmt.Errorf("install krad: %w", err)
	}
	look := LookStep(b.Version, Verified{})
	out, err := h.Run(ctx, look.Script.Command(look.Args...), nil)
	rep, err := lookScript.Result(out, err)
	found, err := ReadLook(b.Version, rep, err)
	if err != nil {
		return "", err
	}
	dir, _, err = InstallFound(ctx, h, b, found, Verified{})
	return dir, err
}

// Verified is what an install checked on a host: the binary's SHA-256, and the identity of the
// three files it found or put there (their device, inode, size, modification and change times,
// as `stat` gives them; "" where the host has no stat -c). A later look given it
// (LookStep) skips the hashing and the trial run when the files are still those: a host's
// reconnect, or a laptop's wake with dozens of hosts, does not hash megabytes on each again.
// Only the user, or root, can change a file in ~/.krad-ade/bin without changing its change
// time.
type Verified struct {
	SHA256, ID string
}

// Found is what [LookStep] found on the host: the folder of a version, and the krad installed
// there, if any, with its SHA-256 and what it printed when run; or that the files are those of
// the Verified the look was given.
type Found struct {
	version string
	dir     string
	id      string   // the files' identity (see Verified), "" when unknown
	same    bool     // the files are those of the Verified the look was given: not hashed
	sha     string   // "" when no whole set of the three names is there
	ran     []string // the report of its run of krad version --json, for [ran]
}

// LookStep looks in ~/.krad-ade/bin/<version> (made if missing, and checked as every folder
// under ~/.krad-ade is), as a step of a [shell.Batch]: for krad, krad-ade-agents and
// krad-ade-askpass, regular files of the user's, executable, one binary (the same file, or the
// same SHA-256), and runs it once. It reports the SHA-256, so that it needs no binary of the
// app's: the platform may not be known yet, as when the same batch probes it. When the files are
// still those last verified (last.ID), it neither hashes nor runs them. [ReadLook] reads its
// result.
func LookStep(version string, last Verified) shell.Step {
	return shell.Step{Script: lookScript, Args: []string{version, last.ID}, Folders: []string{".krad-ade", ".krad-ade/bin", ".krad-ade/bin/" + version}}
}

// ReadLook reads the result of [LookStep] for version.
func ReadLook(version string, rep []string, err error) (Found, error) {
	if err := checkVersion(version); err != nil {
		return Found{}, fmt.Errorf("install krad: %w", err)
	}
	if err != nil {
		return Found{}, fmt.Errorf("install krad: look in ~/.krad-ade/bin/%s: %w", version, err)
	}
	switch {
	case len(rep) == 3 && rep[0] == "same":
		return Found{version: version, dir: rep[1], id: rep[2], same: true}, nil
	case len(rep) >= 4 && rep[0] == "present":
		return Found{version: version, dir: rep[1], id: rep[2], sha: rep[3], ran: rep[4:]}, nil
	case len(rep) == 2 && rep[0] == "missing":
		return Found{version: version, dir: rep[1]}, nil
	}
	return Found{}, fmt.Errorf("install krad: look in ~/.krad-ade/bin/%s: %w", version, unknown(rep))
}

// InstallFound finishes Install after a look given last: when the look found the files of last
// unchanged, and last is of b, there is nothing to do; when it found b there (its SHA-256), it
// checks the run the look made; otherwise it copies b over, as Install says (a look that skipped
// the hashing for another binary than b's is made again, whole). It returns what it verified, for
// the next look.
func InstallFound(ctx context.Context, h Host, b Binary, f Found, last Verified) (dir string, now Verified, err error) {
	if err := b.check(); err != nil {
		return "", Verified{}, fmt.Errorf("install krad: %w", err)
	}
	if f.version != b.Version {
		return "", Verified{}, fmt.Errorf("install krad: the look was for version %q, not %q", f.version, b.Version)
	}
	switch {
	case f.same && last.SHA256 == b.SHA256 && f.id == last.ID:
		if err := checkDir(f.dir); err != nil {
			return "", Verified{}, err
		}
		return f.dir, last, nil
	case f.same:
		dir, err := Install(ctx, h, b)
		return dir, Verified{SHA256: b.SHA256}, err
	case f.sha == b.SHA256:
		dir, err := ran(f.dir, f.ran, b)
		return dir, Verified{SHA256: b.SHA256, ID: f.id}, err
	}
	size := strconv.FormatInt(b.Size, 10)
	out, err := h.Run(ctx, uploadScript.Command(b.Version, b.SHA256, size), io.NewSectionReader(b.Content, 0, b.Size))
	rep, err := uploadScript.Result(out, err)
	if err != nil {
		return "", Verified{}, fmt.Errorf("install krad in ~/.krad-ade/bin/%s: %w", b.Version, err)
	}
	switch {
	case len(rep) == 2 && rep[0] == "short":
		return "", Verified{}, fmt.Errorf("install krad in ~/.krad-ade/bin/%s: the host received %s bytes of %s: the copy was cut short, and removed", b.Version, termsafe.Escape(rep[1], 20), size)
	case len(rep) == 2 && rep[0] == "corrupt":
		return "", Verified{}, fmt.Errorf("install krad in ~/.krad-ade/bin/%s: %w", b.Version, &CorruptError{Want: b.SHA256, Got: termsafe.Escape(rep[1], 64)})
	case len(rep) >= 3 && rep[0] == "installed":
		dir, err := ran(rep[1], rep[3:], b)
		return dir, Verified{SHA256: b.SHA256, ID: rep[2]}, err
	case len(rep) >= 2 && rep[0] == "unrunnable":
		dir, err := ran(rep[1], rep[2:], b)
		return dir, Verified{}, err
	}
	return "", Verified{}, fmt.Errorf("install krad in ~/.krad-ade/bin/%s: %w", b.Version, unknown(rep))
}

// CorruptError says that the copy on the host does not have the SHA-256 it should. It was
// removed, and nothing was replaced.
type CorruptError struct {
	Want, Got string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("the copy on the host has SHA-256 %s, not %s: it was removed", e.Got, e.Want)
}

// ran reads the report of a run of krad version --json in dir: out is its exit status and
// output for a copy that failed to run, or its output alone for one that ran.
func ran(dir string, out []string, b Binary) (string, error) {
	if err := checkDir(dir); err != nil {
		return "", err
	}
	if len(out) >= 1 && out[0] == "status" {
		return "", runError(out[1:])
	}
	var v struct {
		Version       string `json:"version"`
		VariablesOnly bool   `json:"variables_only"`
	}
	text := strings.Join(out, "\n")
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return "", fmt.Errorf("install krad: krad version --json on the host printed %q, not its version", termsafe.Shorten(text, 200))
	}
	if v.Version != b.Version {
		return "", fmt.Errorf("install krad: the binary says it is version %q, not %q", termsafe.Shorten(v.Version, 40), b.Version)
	}
	if !v.VariablesOnly {
		return "", errors.New("install krad: the binary is not the static krad (it reads api.json): build cmd/krad-static")
	}
	return dir, nil
}

// checkDir refuses a folder the host named that is not an absolute path fit for PATH.
func checkDir(dir string) error {
	if !path.IsAbs(dir) || strings.ContainsFunc(dir, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("install krad: the host named the folder %q, not an absolute path", termsafe.Shorten(dir, 200))
	}
	return nil
}

// runError explains a krad that did not run: out is its exit status, then its output.
func runError(out []string) error {
	if len(out) == 0 {
		return fmt.Errorf("install krad: %w", unknown(out))
	}
	status, text := out[0], strings.Join(out[1:], "\n")
	if status == "126" && strings.Contains(text, "Permission denied") {
		return fmt.Errorf("install krad: %w", ErrNoexec)
	}
	return fmt.Errorf("install krad: krad version --json on the host exited %s: %s", termsafe.Escape(status, 10), termsafe.Escape(text, 400))
}

func unknown(rep []string) error {
	return fmt.Errorf("the host's script gave an unknown report %q", termsafe.Shorten(strings.Join(rep, "\n"), 200))
}

// check refuses a Binary that is not whole, or whose version cannot name a folder.
func (b Binary) check() error {
	if err := checkVersion(b.Version); err != nil {
		return err
	}
	if b.Content == nil || b.Size <= 0 {
		return errors.New("no binary to install")
	}
	if len(b.SHA256) != 64 || strings.ContainsFunc(b.SHA256, func(r rune) bool { return !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') }) {
		return errors.New("the binary's SHA-256 is not 64 lowercase hex digits")
	}
	return nil
}

// checkVersion accepts a version that is a safe folder name: letters, digits and . _ + -, not
// starting with a dot or a dash, at most 64 bytes.
func checkVersion(v string) error {
	ok := v != "" && len(v) <= 64 && v[0] != '.' && v[0] != '-'
	for _, r := range v {
		ok = ok && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("._+-", r))
	}
	if !ok {
		return fmt.Errorf("version %q cannot name a folder: letters, digits and . _ + - only", termsafe.Shorten(v, 64))
	}
	return nil
}

// sums defines the hashing of [shell.SHA256] (krad_sha FILE), and krad_have FILE: a regular file
// of the user's, not a link, that it may run.
const sums = shell.SHA256 + `
krad_have() { [ -f "$1" ] && [ ! -L "$1" ] && [ -O "$1" ] && [ -x "$1" ]; };
`

// enterVersion goes into ~/.krad-ade/bin/$1, the version's folder, making what is missing, and
// defines the hashing functions of [sums].
const enterVersion = `
umask 077;
krad_home;
krad_enters "~" .krad-ade bin "$1";
` + sums

// lookScript ($1 version, $2 the files' identity when last verified, or "") reports "same DIR ID"
// when the three files are still those of $2; else "present DIR ID SHA256" and the output of krad
// version --json (or "status N" and the output, if it failed) when the folder holds one binary
// under the three names; or "missing DIR". ID is what stat says of the three files (device, inode,
// size, modification and change times), "" where the host has no stat -c (then it never matches).
var lookScript = shell.Script{
	Name: "INSTALL",
	Body: enterVersion + `
if krad_have krad && krad_have krad-ade-agents && krad_have krad-ade-askpass; then
  i=$(stat -c '%d.%i.%s.%Y.%Z' krad krad-ade-agents krad-ade-askpass 2>/dev/null) || i=;
  krad_words $i; i=$krad_w;
  if [ -n "$i" ] && [ "$i" = "$2" ]; then krad_say ok same "$PWD" "$i"; exit 0; fi;
  if h=$(krad_sha krad) &&
     { [ krad -ef krad-ade-agents ] || [ "$(krad_sha krad-ade-agents)" = "$h" ]; } &&
     { [ krad -ef krad-ade-askpass ] || [ "$(krad_sha krad-ade-askpass)" = "$h" ]; }; then
    o=$(./krad version --json 2>&1); s=$?;
    if [ $s -ne 0 ]; then krad_say ok present "$PWD" "$i" "$h" status $s "$o"; exit 0; fi;
    krad_say ok present "$PWD" "$i" "$h" "$o"; exit 0;
  fi;
fi;
krad_say ok missing "$PWD";
`,
}

// uploadScript ($1 version, $2 SHA-256, $3 size; the binary on stdin) reports "installed DIR ID"
// and the output of krad version --json (ID as lookScript's); or "short N", "corrupt SHA256", or "unrunnable DIR status N"
// and the output when the copy would not run, and then nothing was put in place.
var uploadScript = shell.Script{
	Name: "UPLOAD",
	Body: enterVersion + `
t=.krad.$$.tmp; a=.krad-ade-agents.$$.tmp; p=.krad-ade-askpass.$$.tmp;
trap 'rm -f "$t" "$a" "$p"' EXIT; trap 'exit 1' HUP INT TERM PIPE;
rm -f "$t" "$a" "$p";
set -C;
cat > "$t" || krad_fail "copy krad to the host";
set +C;
if [ -L "$t" ] || [ ! -f "$t" ] || [ ! -O "$t" ]; then krad_refuse notfile "~/.krad-ade/bin/$1/$t"; fi;
n=$(wc -c < "$t");
if [ $n -eq "$3" ]; then :; else krad_say ok short "$n"; exit 0; fi;
h=$(krad_sha "$t") || krad_fail "hash the copy";
if [ "$h" != "$2" ]; then krad_say ok corrupt "$h"; exit 0; fi;
chmod 755 "$t" || krad_fail "make the copy executable";
o=$(./"$t" version --json 2>&1); s=$?;
if [ $s -ne 0 ]; then krad_say ok unrunnable "$PWD" status $s "$o"; exit 0; fi;
ln "$t" "$a" 2>/dev/null || cp "$t" "$a" || krad_fail "copy krad to krad-ade-agents";
chmod 755 "$a" || krad_fail "make krad-ade-agents executable";
mv -f "$a" krad-ade-agents || krad_fail "rename krad-ade-agents into place";
ln "$t" "$p" 2>/dev/null || cp "$t" "$p" || krad_fail "copy krad to krad-ade-askpass";
chmod 755 "$p" || krad_fail "make krad-ade-askpass executable";
mv -f "$p" krad-ade-askpass || krad_fail "rename krad-ade-askpass into place";
mv -f "$t" krad || krad_fail "rename krad into place";
i=$(stat -c '%d.%i.%s.%Y.%Z' krad krad-ade-agents krad-ade-askpass 2>/dev/null) || i=;
krad_words $i; i=$krad_w;
krad_say ok installed "$PWD" "$i" "$o";
`,
}
