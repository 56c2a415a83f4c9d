//go:build unix

package fileowner

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := Of(fi); got != os.Getuid() {
		t.Errorf("Of = %d, want %d, the test's uid", got, os.Getuid())
	}
	if os.Getuid() == 0 {
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		fi, _ = os.Stat(path)
		if got := Of(fi); got != 65534 {
			t.Errorf("Of = %d after chown, want 65534", got)
		}
	}
}
