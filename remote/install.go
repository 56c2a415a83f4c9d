package remote

import (
	"bytes"
	"compress/gzip"
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
	"sync"

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
	// Packed is the content gzipped: what goes over the wire to a host that has gzip (every
	// distribution's base has it), which unpacks it there, checking the stream's own CRC-32 and
	// size as it does, before the trial run checks the SHA-256 of what it unpacked, as it checks a
	// copy sent whole. nil: the content is sent as it is.
	Packed []byte

	crc *plainCRC // the content's cksum CRC, computed once for the hosts without gzip
}

// plainCRC is the cksum CRC of the content ReadBinary read, computed at the first copy sent
// whole and shared by the Binary's copies; a copy whose Content or Size was changed since gets its
// own, computed each time.
type plainCRC struct {
	content *bytes.Reader // what ReadBinary read
	size    int64
	once    sync.Once
	sum     uint32
	err     error
}

// cksum is the POSIX cksum CRC of the content, which a copy sent whole is checked by.
func (b Binary) cksum() (uint32, error) {
	if r, ok := b.Content.(*bytes.Reader); !ok || b.crc == nil || r != b.crc.content || b.Size != b.crc.size {
		return cksum(io.NewSectionReader(b.Content, 0, b.Size))
	}
	b.crc.once.Do(func() { b.crc.sum, b.crc.err = cksum(io.NewSectionReader(b.Content, 0, b.Size)) })
	return b.crc.sum, b.crc.err
}

// PackedName is the name of a static krad's gzipped form beside it: krad-linux-amd64.gz, as
// build/linux-static/build writes it.
func PackedName(path string) string { return path + ".gz" }

// ReadBinary reads the static krad for p from the file at path (see [Platform.StaticName]), and
// checks that it is a static ELF executable for p. Its gzipped form is the file beside it
// ([PackedName]) when that unpacks to the very same bytes; otherwise (none, or one left by
// another build) ReadBinary packs it itself, at gzip's fastest level.
func ReadBinary(path string, p Platform, version string) (Binary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Binary{}, fmt.Errorf("read the static krad: %w", err)
	}
	if err := checkELF(b, p); err != nil {
		return Binary{}, fmt.Errorf("static krad %q: %w", path, err)
	}
	sum := sha256.Sum256(b)
	packed, err := os.ReadFile(PackedName(path))
	if err != nil || !unpacksTo(packed, b) {
		if packed, err = pack(b); err != nil {
			return Binary{}, fmt.Errorf("static krad %q: gzip it: %w", path, err)
		}
	}
	content := bytes.NewReader(b)
	return Binary{Platform: p, Version: version, Content: content, Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:]), Packed: packed,
		crc: &plainCRC{content: content, size: int64(len(b))}}, nil
}

// unpacksTo says whether packed is a gzip stream of exactly want.
func unpacksTo(packed, want []byte) bool {
	r, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		return false
	}
	got, err := io.ReadAll(io.LimitReader(r, int64(len(want))+1))
	return err == nil && bytes.Equal(got, want)
}

// pack gzips b at the fastest level: a few tenths of a second for a static krad, paid once by
// a build that did not ship its .gz.
func pack(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
// session's stdin (gzipped, b.Packed, when the host has gzip to unpack it) into a temporary file in
// that folder, is checked by its CRC and size on the host, made executable, run once (krad version
// --json --sha256: the copy says its version and the SHA-256 of its own file, which must be b's),
// and only then linked and renamed into place, so a cut or corrupt copy never takes the place of
// a good one, nor runs if it is cut or damaged. All of it is one SSH exec. Either way the
// installed krad is run and must print b.Version: a home mounted noexec is [ErrNoexec].
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
	gzip    bool     // the host has gzip, to unpack a packed copy
	sha     string   // "" when no whole set of the three names is there
	ran     []string // the report of its run of krad version --json --sha256, for [ran]
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
	case len(rep) >= 5 && rep[0] == "present":
		return Found{version: version, dir: rep[1], id: rep[2], gzip: rep[3] == "gzip", sha: rep[4], ran: rep[5:]}, nil
	case len(rep) == 3 && rep[0] == "missing":
		return Found{version: version, dir: rep[1], gzip: rep[2] == "gzip"}, nil
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
	var content io.Reader = io.NewSectionReader(b.Content, 0, b.Size)
	form, crc := "plain", "-"
	if f.gzip && b.Packed != nil {
		content, form = bytes.NewReader(b.Packed), "gzip"
	} else {
		sum, err := b.cksum()
		if err != nil {
			return "", Verified{}, fmt.Errorf("install krad: read the binary: %w", err)
		}
		crc = strconv.FormatUint(uint64(sum), 10)
	}
	out, err := h.Run(ctx, uploadScript.Command(b.Version, b.SHA256, size, form, crc), content)
	rep, err := uploadScript.Result(out, err)
	if err != nil {
		return "", Verified{}, fmt.Errorf("install krad in ~/.krad-ade/bin/%s: %w", b.Version, err)
	}
	switch {
	case len(rep) == 2 && rep[0] == "short":
		return "", Verified{}, fmt.Errorf("install krad in ~/.krad-ade/bin/%s: the host received %s bytes of %s: the copy was cut short, and removed", b.Version, termsafe.Escape(rep[1], 20), size)
	case len(rep) == 1 && rep[0] == "damaged":
		return "", Verified{}, fmt.Errorf("install krad in ~/.krad-ade/bin/%s: %w", b.Version, &CorruptError{Want: b.SHA256})
	case len(rep) >= 1 && rep[0] == "corrupt":
		v, err := readVersion(rep[1:])
		if err != nil {
			return "", Verified{}, err
		}
		return "", Verified{}, fmt.Errorf("install krad in ~/.krad-ade/bin/%s: %w", b.Version, &CorruptError{Want: b.SHA256, Got: termsafe.Escape(v.SHA256, 64)})
	case len(rep) >= 3 && rep[0] == "installed":
		dir, err := ran(rep[1], rep[3:], b)
		return dir, Verified{SHA256: b.SHA256, ID: rep[2]}, err
	case len(rep) >= 2 && rep[0] == "unrunnable":
		dir, err := ran(rep[1], rep[2:], b)
		return dir, Verified{}, err
	}
	return "", Verified{}, fmt.Errorf("install krad in ~/.krad-ade/bin/%s: %w", b.Version, unknown(rep))
}

// CorruptError says that the copy on the host is not the binary: it was removed, and nothing was
// replaced.
type CorruptError struct {
	// Want is the binary's SHA-256; Got is the one the copy said of itself when it ran, or ""
	// when it was not run: its CRC already differed.
	Want, Got string
}

func (e *CorruptError) Error() string {
	if e.Got == "" {
		return "the copy on the host is damaged (its CRC is not the binary's): it was removed"
	}
	return fmt.Sprintf("the copy on the host has SHA-256 %s, not %s: it was removed", e.Got, e.Want)
}

// versionJSON is what krad version --json prints, "sha256" with --sha256.
type versionJSON struct {
	Version       string `json:"version"`
	VariablesOnly bool   `json:"variables_only"`
	SHA256        string `json:"sha256"`
}

// readVersion reads the output of krad version --json that a run on the host printed.
func readVersion(out []string) (versionJSON, error) {
	var v versionJSON
	text := strings.Join(out, "\n")
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return versionJSON{}, fmt.Errorf("install krad: krad version --json on the host printed %q, not its version", termsafe.Shorten(text, 200))
	}
	return v, nil
}

// ran reads the report of a run of krad version --json --sha256 in dir: out is its exit status
// and output for a copy that failed to run, or its output alone for one that ran, which must say
// b's version and b's SHA-256 of itself.
func ran(dir string, out []string, b Binary) (string, error) {
	if err := checkDir(dir); err != nil {
		return "", err
	}
	if len(out) >= 1 && out[0] == "status" {
		return "", runError(out[1:])
	}
	v, err := readVersion(out)
	if err != nil {
		return "", err
	}
	if v.Version != b.Version {
		return "", fmt.Errorf("install krad: the binary says it is version %q, not %q", termsafe.Shorten(v.Version, 40), b.Version)
	}
	if !v.VariablesOnly {
		return "", errors.New("install krad: the binary is not the static krad (it reads api.json): build cmd/krad-static")
	}
	if v.SHA256 != b.SHA256 {
		return "", fmt.Errorf("install krad: %w", &CorruptError{Want: b.SHA256, Got: termsafe.Escape(v.SHA256, 64)})
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

// enterVersion goes into ~/.krad-ade/bin/$1, the version's folder, making what is missing.
const enterVersion = `
umask 077;
krad_home;
krad_enters "~" .krad-ade bin "$1";
`

// lookScript ($1 version, $2 the files' identity when last verified, or "") reports "same DIR ID"
// when the three files are still those of $2; else "present DIR ID GZ SHA256" and the output of
// krad version --json --sha256 (or "status N" and the output, if it failed) when the folder holds
// one binary under the three names; or "missing DIR GZ". ID is what stat says of the three files
// (device, inode, size, modification and change times), "" where the host has no stat -c (then it
// never matches). GZ is "gzip" when the host has gzip, to unpack a packed copy, else "-".
//
// krad's SHA-256 is the one its run says of itself, as in uploadScript, where the run succeeds:
// the run the look makes anyway hashes the file in the same process, and no sha256sum is started.
// A krad that does not run (a noexec home, a build that has no --sha256) is hashed by the host's
// tool, as are krad-ade-agents and krad-ade-askpass when they are copies rather than links of it.
var lookScript = shell.Script{
	Name: "INSTALL",
	Body: enterVersion + sums + `
if command -v gzip >/dev/null 2>&1; then z=gzip; else z=-; fi;
if krad_have krad && krad_have krad-ade-agents && krad_have krad-ade-askpass; then
  i=$(stat -c '%d.%i.%s.%Y.%Z' krad krad-ade-agents krad-ade-askpass 2>/dev/null) || i=;
  krad_words $i; i=$krad_w;
  if [ -n "$i" ] && [ "$i" = "$2" ]; then krad_say ok same "$PWD" "$i"; exit 0; fi;
  o=$(./krad version --json --sha256 2>&1); s=$?;
  h=;
  if [ $s -eq 0 ]; then case $o in *'"sha256":"'*) h=${o#*'"sha256":"'}; h=${h%%'"'*};; esac; fi;
  if [ -z "$h" ]; then h=$(krad_sha krad) || h=; fi;
  if [ -n "$h" ] &&
     { [ krad -ef krad-ade-agents ] || [ "$(krad_sha krad-ade-agents)" = "$h" ]; } &&
     { [ krad -ef krad-ade-askpass ] || [ "$(krad_sha krad-ade-askpass)" = "$h" ]; }; then
    if [ $s -ne 0 ]; then krad_say ok present "$PWD" "$i" "$z" "$h" status $s "$o"; exit 0; fi;
    krad_say ok present "$PWD" "$i" "$z" "$h" "$o"; exit 0;
  fi;
fi;
krad_say ok missing "$PWD" "$z";
`,
}

// uploadScript ($1 version, $2 SHA-256, $3 size, $4 "gzip" when the binary on stdin is gzipped,
// "plain" when it is not, $5 the POSIX cksum CRC of the binary, for a plain copy) reports
// "installed DIR ID" and the output of krad version --json --sha256 (ID as lookScript's); or
// "short N" (N bytes arrived), "damaged" (the right size, other bytes), "corrupt" and that output
// (the copy ran, and said another SHA-256), or "unrunnable DIR status N" and the output when the
// copy would not run; after any of those nothing was put in place.
//
// Before the copy runs, what arrived is checked to be the binary whole: a gzipped copy by gzip
// itself, which checks the CRC-32 and the size its stream ends with (the app checked that the
// stream unpacks to the binary), a plain one by cksum's CRC and size. Then the copy runs once,
// and prints its version and the SHA-256 of the very file that runs (/proc/self/exe), which must
// be the app's, before the three names are put in place. That SHA-256 is computed by the copy
// itself: by the time it runs, its bytes passed a CRC of the app's (on a host without cksum, its
// size only), in a folder no one else can write, and a copy that is not the app's binary cannot
// print the app's SHA-256, which it is not given and does not hold. (sha256sum there would hash
// the same bytes in a process of its own, at a fifth of the speed where it has no SHA
// instructions: 13 ms for 4 MB here, against 3 ms.)
//
// Names that are missing are linked to the copy at once (a link appears whole or not at all);
// names already there are replaced by a rename over them, from a link made beside them, so that a
// terminal never finds one missing or half-written. A folder that refuses hard links gets copies.
var uploadScript = shell.Script{
	Name: "UPLOAD",
	Body: enterVersion + `
t=.krad.$$.tmp; a=.krad-ade-agents.$$.tmp; p=.krad-ade-askpass.$$.tmp;
krad_clean() { for f in "$t" "$a" "$p"; do if [ -e "$f" ] || [ -L "$f" ]; then rm -f "$t" "$a" "$p"; return; fi; done; };
trap krad_clean EXIT; trap 'exit 1' HUP INT TERM PIPE;
krad_clean;
set -C;
z=0;
if [ "$4" = gzip ]; then
  { gzip -dc; z=$?; } > "$t" || krad_fail "copy krad to the host";
else
  cat > "$t" || krad_fail "copy krad to the host";
fi;
set +C;
if [ -L "$t" ] || [ ! -f "$t" ] || [ ! -O "$t" ]; then krad_refuse notfile "~/.krad-ade/bin/$1/$t"; fi;
krad_two() { krad_w="$1 $2"; };
ok=;
if [ "$4" = gzip ]; then
  if [ $z -eq 0 ]; then ok=1; fi;
elif command -v cksum >/dev/null 2>&1; then
  c=$(cksum < "$t") || krad_fail "check the copy";
  krad_two $c;
  if [ "$krad_w" = "$5 $3" ]; then ok=1; fi;
else
  ok=size;
fi;
if [ "$ok" != 1 ]; then
  n=$(wc -c < "$t") || krad_fail "check the copy";
  krad_words $n;
  if [ "$krad_w" != "$3" ]; then krad_say ok short "$krad_w"; exit 0; fi;
  if [ -z "$ok" ]; then krad_say ok damaged; exit 0; fi;
fi;
chmod 755 "$t" || krad_fail "make the copy executable";
o=$(./"$t" version --json --sha256 2>&1); s=$?;
if [ $s -ne 0 ]; then krad_say ok unrunnable "$PWD" status $s "$o"; exit 0; fi;
case $o in *'"sha256":"'"$2"'"'*) ;; *) krad_say ok corrupt "$o"; exit 0;; esac;
krad_place() {
  if [ ! -e "$1" ] && [ ! -L "$1" ] && ln "$t" "$1" 2>/dev/null; then return 0; fi;
  { ln "$t" "$2" 2>/dev/null || { cp "$t" "$2" && chmod 755 "$2"; }; } && mv -f "$2" "$1";
};
krad_place krad-ade-agents "$a" || krad_fail "put krad-ade-agents in place";
krad_place krad-ade-askpass "$p" || krad_fail "put krad-ade-askpass in place";
mv -f "$t" krad || krad_fail "rename krad into place";
i=$(stat -c '%d.%i.%s.%Y.%Z' krad krad-ade-agents krad-ade-askpass 2>/dev/null) || i=;
krad_words $i; i=$krad_w;
krad_say ok installed "$PWD" "$i" "$o";
`,
}

// cksum is the CRC that POSIX cksum prints for what r holds: the CRC-32 of polynomial 0x04C11DB7,
// most significant bit first, of the bytes and then of their count (least significant byte first,
// in as few bytes as it takes), inverted. A plain copy is checked with it on the host before it
// runs.
func cksum(r io.Reader) (uint32, error) {
	var crc uint32
	var n uint64
	buf := make([]byte, 64<<10)
	for {
		k, err := r.Read(buf)
		for _, c := range buf[:k] {
			crc = crc<<8 ^ cksumTable[byte(crc>>24)^c]
		}
		n += uint64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	for ; n != 0; n >>= 8 {
		crc = crc<<8 ^ cksumTable[byte(crc>>24)^byte(n)]
	}
	return ^crc, nil
}

var cksumTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i) << 24
		for range 8 {
			if c&(1<<31) != 0 {
				c = c<<1 ^ 0x04C11DB7
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
