package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
)

const secret = "6f1c0d9e2b7a4c58e3f09a1d7b6c2e40"

func sample(t testing.TB) File {
	t.Helper()
	tok, err := api.ParseToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	return File{
		APIVersion: 1,
		Endpoint:   "127.0.0.1:52144",
		Token:      tok,
		PID:        48211,
		StartedAt:  time.Date(2026, 11, 10, 9, 12, 0, 0, time.UTC),
	}
}

// same reports whether two Files hold the same values, the token included.
func same(a, b File) bool {
	return a.APIVersion == b.APIVersion && a.Endpoint == b.Endpoint &&
		a.Token.Reveal() == b.Token.Reveal() && a.PID == b.PID && a.StartedAt.Equal(b.StartedAt)
}

func TestDir(t *testing.T) {
	abs := func(parts ...string) string {
		return filepath.Join(append([]string{string(filepath.Separator)}, parts...)...)
	}
	if runtime.GOOS == "windows" {
		abs = func(parts ...string) string { return filepath.Join(append([]string{`C:\`}, parts...)...) }
	}
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{"xdg wins", map[string]string{"XDG_CONFIG_HOME": abs("xdg"), "HOME": abs("home", "u"), "APPDATA": abs("appdata")}, filepath.Join(abs("xdg"), "krad-ade"), false},
		{"relative xdg is skipped", map[string]string{"XDG_CONFIG_HOME": "xdg", "HOME": abs("home", "u")}, filepath.Join(abs("home", "u"), ".config", "krad-ade"), false},
		{"home", map[string]string{"HOME": abs("home", "u")}, filepath.Join(abs("home", "u"), ".config", "krad-ade"), false},
		{"appdata", map[string]string{"APPDATA": abs("appdata")}, filepath.Join(abs("appdata"), "krad-ade"), false},
		{"relative home is skipped", map[string]string{"HOME": "u", "APPDATA": abs("appdata")}, filepath.Join(abs("appdata"), "krad-ade"), false},
		{"nothing", map[string]string{}, "", true},
		{"only relative", map[string]string{"XDG_CONFIG_HOME": "a", "HOME": "b", "APPDATA": "c"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Dir(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWriteRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "krad-ade")
	want := sample(t)
	if err := Write(dir, want); err != nil {
		t.Fatalf("Write: %v", err)
	}
	got, err := Read(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if !same(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestWriteJSON(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, sample(t)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "api_version": 1,
  "endpoint": "127.0.0.1:52144",
  "token": "` + secret + `",
  "pid": 48211,
  "started_at": "2026-11-10T09:12:00.000Z"
}
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	// The keys, in order, read back by a decoder that knows nothing of this package.
	dec := json.NewDecoder(bytes.NewReader(got))
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key.(string))
		if _, err := dec.Token(); err != nil { // the value, a scalar
			t.Fatal(err)
		}
	}
	if got, want := strings.Join(keys, ","), "api_version,endpoint,token,pid,started_at"; got != want {
		t.Errorf("got keys %s, want %s", got, want)
	}
}

func TestWriteTimeIsUTCMilliseconds(t *testing.T) {
	f := sample(t)
	f.StartedAt = time.Date(2026, 11, 10, 10, 12, 0, 123456789, time.FixedZone("CET", 3600))
	dir := t.TempDir()
	if err := Write(dir, f); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, FileName))
	if want := `"started_at": "2026-11-10T09:12:00.123Z"`; !bytes.Contains(data, []byte(want)) {
		t.Errorf("got %s, want it to contain %s", data, want)
	}
	got, err := Read(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 10, 9, 12, 0, 123000000, time.UTC); !got.StartedAt.Equal(want) || got.StartedAt.Location() != time.UTC {
		t.Errorf("got %v, want %v", got.StartedAt, want)
	}
}

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	first := sample(t)
	if err := Write(dir, first); err != nil {
		t.Fatal(err)
	}
	second := sample(t)
	second.PID = 7
	second.Endpoint = "[::1]:4000"
	if err := Write(dir, second); err != nil {
		t.Fatal(err)
	}
	got, err := Read(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !same(got, second) {
		t.Errorf("got %v, want %v", got, second)
	}
	assertOnly(t, dir, FileName)
}

func TestWriteRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, FileName)); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	err := Write(dir, sample(t))
	if want := "write " + filepath.Join(dir, FileName) + ": is a symbolic link: refused"; err == nil || err.Error() != want {
		t.Errorf("got error %v, want %q", err, want)
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep" {
		t.Errorf("got target contents %q, want %q", data, "keep")
	}
	if fi, err := os.Lstat(filepath.Join(dir, FileName)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("got %v, %v; want the symlink left in place", fi, err)
	}
	assertOnly(t, dir, FileName)
}

func TestWriteRefusesDirectoryAtTarget(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, sample(t)); err == nil {
		t.Error("got no error, want one")
	}
	assertOnly(t, dir, FileName)
}

func TestWriteRefusesOpenFolder(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no permission bits on Windows")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	err := Write(dir, sample(t))
	if err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Errorf("got error %v, want one about other users", err)
	}
	assertOnly(t, dir)
}

func TestWriteRefusesBadFile(t *testing.T) {
	tests := []struct {
		name   string
		change func(*File)
		want   string
	}{
		{"zero token", func(f *File) { f.Token = api.Token{} }, "token"},
		{"remote endpoint", func(f *File) { f.Endpoint = "192.0.2.1:80" }, "loopback"},
		{"no endpoint", func(f *File) { f.Endpoint = "" }, "endpoint"},
		{"no pid", func(f *File) { f.PID = 0 }, "pid"},
		{"no version", func(f *File) { f.APIVersion = 0 }, "api_version"},
		{"no start", func(f *File) { f.StartedAt = time.Time{} }, "started_at"},
		{"start after 9999", func(f *File) { f.StartedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "started_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			f := sample(t)
			tt.change(&f)
			err := Write(dir, f)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one about %s", err, tt.want)
			}
			assertOnly(t, dir)
		})
	}
}

func TestWriteSuccessLeavesNoTempFile(t *testing.T) {
	dir := t.TempDir()
	for range 3 {
		if err := Write(dir, sample(t)); err != nil {
			t.Fatal(err)
		}
	}
	assertOnly(t, dir, FileName)
}

// assertOnly checks that dir holds exactly the names given.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("got files %q, want %q", got, names)
	}
}

func TestRead(t *testing.T) {
	good := func(change func(m map[string]any)) string {
		m := map[string]any{
			"api_version": 1,
			"endpoint":    "127.0.0.1:52144",
			"token":       secret,
			"pid":         48211,
			"started_at":  "2026-11-10T09:12:00.000Z",
		}
		change(m)
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	tests := []struct {
		name    string
		data    string
		mode    fs.FileMode
		wantErr string // "" means success
	}{
		{"the spec's example", good(func(map[string]any) {}), 0o600, ""},
		{"unknown keys are ignored", good(func(m map[string]any) { m["build"] = "0.2.0" }), 0o600, ""},
		{"ipv6 loopback", good(func(m map[string]any) { m["endpoint"] = "[::1]:52144" }), 0o600, ""},
		{"group readable", good(func(map[string]any) {}), 0o640, "mode 0640"},
		{"world readable", good(func(map[string]any) {}), 0o604, "mode 0604"},
		{"not json", "{" + secret, 0o600, "not a JSON object"},
		{"trailing garbage", good(func(map[string]any) {}) + secret, 0o600, "not a JSON object"},
		{"an array", `["` + secret + `"]`, 0o600, "not a JSON object"},
		{"null", `null`, 0o600, "not a JSON object"},
		{"bad token", good(func(m map[string]any) { m["token"] = strings.ToUpper(secret) }), 0o600, "token is not 32 hex digits"},
		{"short token", good(func(m map[string]any) { m["token"] = secret[:31] }), 0o600, "token is not 32 hex digits"},
		{"token as a number", good(func(m map[string]any) { m["token"] = json.Number("12345678901234567890123456789012") }), 0o600, "token must be a string"},
		{"no token", good(func(m map[string]any) { delete(m, "token") }), 0o600, "no token"},
		{"remote endpoint", good(func(m map[string]any) { m["endpoint"] = "192.0.2.1:52144" }), 0o600, "loopback"},
		{"host name endpoint", good(func(m map[string]any) { m["endpoint"] = "localhost:52144" }), 0o600, "endpoint"},
		{"port zero", good(func(m map[string]any) { m["endpoint"] = "127.0.0.1:0" }), 0o600, "endpoint"},
		{"fractional version", good(func(m map[string]any) { m["api_version"] = 1.5 }), 0o600, "api_version must be a whole number"},
		{"version as string", good(func(m map[string]any) { m["api_version"] = "1" }), 0o600, "api_version must be a whole number"},
		{"version zero", good(func(m map[string]any) { m["api_version"] = 0 }), 0o600, "api_version"},
		{"negative pid", good(func(m map[string]any) { m["pid"] = -4 }), 0o600, "pid"},
		{"bad time", good(func(m map[string]any) { m["started_at"] = "yesterday " + secret }), 0o600, "started_at is not an RFC 3339 time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			if runtime.GOOS == "windows" && tt.mode != 0o600 {
				t.Skip("no permission bits on Windows")
			}
			got, err := Read(path)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if want := sample(t); got.Token.Reveal() != want.Token.Reveal() || got.PID != want.PID {
					t.Errorf("got %v, want %v", got, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %v, want an error containing %q", got, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %q, want it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(strings.ToLower(err.Error()), secret) || strings.Contains(err.Error(), secret[:16]) {
				t.Errorf("got error %q, which contains the token", err)
			}
		})
	}
}

func TestReadMissing(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), FileName))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v, want an error matching fs.ErrNotExist", err)
	}
}

func TestReadRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, sample(t)); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), FileName)
	if err := os.Symlink(filepath.Join(dir, FileName), link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	if _, err := Read(link); err == nil || err.Error() != "read "+link+": is a symbolic link: refused" {
		t.Errorf("got error %v, want read %s: is a symbolic link: refused", err, link)
	}
}

func TestReadRefusesFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("got error %v, want one about a regular file", err)
	}
}

func TestReadRefusesHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, bytes.Repeat([]byte(" "), maxSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("got error %v, want one about the size", err)
	}
}

func TestRemoveIfOurs(t *testing.T) {
	tests := []struct {
		name     string
		write    string // "" writes sample() with pid 48211
		pid      int
		wantGone bool
		wantErr  error
	}{
		{"ours", "", 48211, true, nil},
		{"another pid's", "", 1234, false, ErrNotOurs},
		{"no pid in it", `{"token":"` + secret + `"}`, 48211, false, ErrNotOurs},
		{"not json", `{{{`, 48211, false, ErrNotOurs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if tt.write == "" {
				if err := Write(dir, sample(t)); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, []byte(tt.write), 0o600); err != nil {
				t.Fatal(err)
			}
			err := RemoveIfOurs(path, tt.pid)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("got error %v, want %v", err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("got error %q, which contains the token", err)
			}
			_, statErr := os.Lstat(path)
			if gone := errors.Is(statErr, fs.ErrNotExist); gone != tt.wantGone {
				t.Errorf("got gone %v, want %v", gone, tt.wantGone)
			}
		})
	}
}

func TestRemoveIfOursMissing(t *testing.T) {
	if err := RemoveIfOurs(filepath.Join(t.TempDir(), FileName), 1); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

func TestRemoveIfOursLeavesSymlink(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, sample(t)); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), FileName)
	if err := os.Symlink(filepath.Join(dir, FileName), link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	if err := RemoveIfOurs(link, sample(t).PID); err == nil {
		t.Error("got no error, want one")
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("got %v, want the symlink left in place", err)
	}
}

func TestFileNeverPrintsToken(t *testing.T) {
	f := sample(t)
	data, _ := json.Marshal(f)
	for _, s := range []string{
		fmt.Sprintf("%v %+v %#v", f, f, f), fmt.Sprintf("%v %+v %#v", &f, &f, &f),
		fmt.Sprint(f), fmt.Sprint(&f), string(data),
	} {
		if strings.Contains(s, secret) {
			t.Errorf("got %s, which contains the token", s)
		}
	}
}

func FuzzRead(f *testing.F) {
	good, err := encode(sample(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"api_version":1,"endpoint":"[::1]:1","token":"` + secret + `","pid":1,"started_at":"0000-01-01T00:00:00.999999999+23:59","x":null}`))
	f.Add([]byte(`{"api_version":1e0,"endpoint":"127.0.0.1:65535","token":"` + secret + `","pid":2147483648,"started_at":"9999-12-31T23:59:59Z"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Read(path)
		if err != nil {
			if tok := tokenIn(data); tok != "" && strings.Contains(err.Error(), tok) {
				t.Fatalf("got error %q, which contains the token", err)
			}
			return
		}
		if err := Write(dir, got); err != nil {
			t.Fatalf("Write of what Read accepted: %v", err)
		}
		again, err := Read(path)
		if err != nil {
			t.Fatalf("Read of what Write wrote: %v", err)
		}
		if !same(again, got) || again.StartedAt != got.StartedAt {
			t.Fatalf("got %v after a round trip, want %v", again, got)
		}
	})
}

// tokenIn returns the token field of data if it is a JSON object with one at least 16 bytes long,
// however malformed.
func tokenIn(data []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	s := string(m["token"])
	_ = json.Unmarshal(m["token"], &s)
	if len(s) < 16 {
		return ""
	}
	return s
}
