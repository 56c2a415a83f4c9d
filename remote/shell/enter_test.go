package shell

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// enters enters a/b/c of home with krad_enters, as the scripts that run at every connect do,
// and reports the folder it ended in.
var enters = Script{Name: "ENTERS", Body: `
cd -P "$1" || krad_fail "enter the home";
krad_enters "~" a b c;
krad_say ok "$PWD" "$(pwd -P)";
`}

func runEnters(t *testing.T, home string) ([]string, error) {
	t.Helper()
	out, err := exec.Command("sh", "-c", enters.Command(home)).Output()
	return enters.Result(out, err)
}

// TestEntersMakesEachFolderOwnerOnly: krad_enters creates the folders that are missing, and
// makes every folder it entered owner-only with its one chmod, the loose ones above the last as
// well as the last; the home above them is left as it was. $PWD is then the path pwd -P prints.
func TestEntersMakesEachFolderOwnerOnly(t *testing.T) {
	home := t.TempDir()
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(home, "a"), 0o755)
	os.Chmod(filepath.Join(home, "a", "b"), 0o777)
	// The home is reached through a symbolic link, as a home on another disk may be.
	link := filepath.Join(t.TempDir(), "home")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	got, err := runEnters(t, link)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(home)
	if want := filepath.Join(real, "a", "b", "c"); len(got) != 2 || got[0] != want || got[1] != want {
		t.Errorf("got %q, want $PWD and pwd -P both %s", got, want)
	}
	for _, d := range []string{"a", "a/b", "a/b/c"} {
		fi, err := os.Stat(filepath.Join(home, d))
		if err != nil || fi.Mode() != os.ModeDir|0o700 {
			t.Errorf("~/%s: %v, %v; want drwx------", d, fi.Mode(), err)
		}
	}
	if fi, _ := os.Stat(home); fi.Mode().Perm() != 0o755 {
		t.Errorf("the home is %v, want it left at 0755", fi.Mode())
	}
}

// TestEntersRefuses: a symbolic link, or a file, in the middle of the path is refused with its
// path as the user would type it, and nothing under it or past it is made or changed; the
// folder above it is left as it was too (the one chmod comes after the last folder).
func TestEntersRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		make         func(t *testing.T, b string)
	}{
		{"symlink", "symlink", func(t *testing.T, b string) {
			target := t.TempDir()
			os.Chmod(target, 0o755)
			if err := os.Symlink(target, b); err != nil {
				t.Fatal(err)
			}
		}},
		{"file", "notdir", func(t *testing.T, b string) {
			if err := os.WriteFile(b, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.Mkdir(filepath.Join(home, "a"), 0o755); err != nil {
				t.Fatal(err)
			}
			b := filepath.Join(home, "a", "b")
			tc.make(t, b)
			_, err := runEnters(t, home)
			var re *RefusedError
			if !errors.As(err, &re) || re.Path != "~/a/b" || re.Reason != tc.reason {
				t.Fatalf("got %v, want ~/a/b refused (%s)", err, tc.reason)
			}
			if fi, _ := os.Stat(filepath.Join(home, "a")); fi.Mode().Perm() != 0o755 {
				t.Errorf("~/a became %v, want it left as it was", fi.Mode())
			}
			if fi, err := os.Stat(b); err == nil && fi.IsDir() {
				if fi.Mode().Perm() != 0o755 {
					t.Errorf("the link's target became %v, want it untouched", fi.Mode())
				}
				if _, err := os.Stat(filepath.Join(b, "c")); err == nil {
					t.Error("c was made in the link's target")
				}
			}
		})
	}
}

// TestBatchChmodsOnlyWhatIsLoose: a batch whose steps' folders are all owner-only already starts
// no chmod (a wrapper first in the PATH logs each); one folder loose, or missing, and the steps
// make their folders owner-only as they would alone: each ends drwx------.
func TestBatchChmodsOnlyWhatIsLoose(t *testing.T) {
	chmod, err := exec.LookPath("chmod")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "chmod.log")
	wrapper := "#!/bin/sh\necho \"$*\" >>'" + log + "'\nexec '" + chmod + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "chmod"), []byte(wrapper), 0o700); err != nil {
		t.Fatal(err)
	}
	ab := Script{Name: "AB", Body: `krad_home; krad_enters "~" a b; krad_say ok "$PWD";`}
	acd := Script{Name: "ACD", Body: `krad_home; krad_enters "~" a c; krad_enter d "~/a/c/d"; krad_say ok "$PWD";`}
	batch := Batch{
		{Script: ab, Folders: []string{"a", "a/b"}},
		{Script: acd, Folders: []string{"a", "a/c", "a/c/d"}},
	}
	home := t.TempDir()
	run := func() (chmods int) {
		t.Helper()
		os.Remove(log)
		cmd := exec.Command("sh", "-c", batch.Command())
		cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.Output()
		for i := range batch {
			if _, err := batch.Result(i, out, err); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		for _, d := range []string{"a", "a/b", "a/c", "a/c/d"} {
			if fi, err := os.Lstat(filepath.Join(home, d)); err != nil || fi.Mode() != os.ModeDir|0o700 {
				t.Errorf("~/%s: %v; want drwx------", d, err)
			}
		}
		b, _ := os.ReadFile(log)
		return bytes.Count(b, []byte("\n"))
	}
	if n := run(); n == 0 {
		t.Error("the first run, which made the folders, started no chmod")
	}
	if n := run(); n != 0 {
		t.Errorf("with every folder owner-only, the batch started %d chmods, want none", n)
	}
	os.Chmod(filepath.Join(home, "a", "c"), 0o755)
	if n := run(); n == 0 {
		t.Error("with ~/a/c loose, the batch started no chmod")
	}
	os.Remove(filepath.Join(home, "a", "c", "d"))
	if n := run(); n == 0 {
		t.Error("with ~/a/c/d missing, the batch started no chmod")
	}
	if n := run(); n != 0 {
		t.Errorf("once more with every folder owner-only, %d chmods, want none", n)
	}
}
