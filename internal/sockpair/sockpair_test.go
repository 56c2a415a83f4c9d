package sockpair_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/krad-ade/krad/internal/sockpair"
)

// TestNew: what one end writes the other reads, a half-close reads as the end of input on the
// other end, and the half-closed end still reads what comes back.
func TestNew(t *testing.T) {
	a, b, err := sockpair.New()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	_ = a.SetDeadline(time.Now().Add(5 * time.Second))
	_ = b.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(a, "line\n")
	if err := a.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(b); err != nil || string(got) != "line\n" {
		t.Fatalf("read %q, %v", got, err)
	}
	_, _ = io.WriteString(b, "answer\n")
	b.Close()
	if got, err := io.ReadAll(a); err != nil || string(got) != "answer\n" {
		t.Fatalf("the half-closed end read %q, %v", got, err)
	}
}
