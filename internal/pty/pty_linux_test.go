package pty

import (
	"io"
	"testing"
)

// TestOpen: what is written to the terminal is read from the master, as a window's output.
func TestOpen(t *testing.T) {
	master, term, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer term.Close()
	if _, err := io.WriteString(term, "hi"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := io.ReadFull(master, buf); err != nil || string(buf) != "hi" {
		t.Fatalf("the master read %q, %v", buf, err)
	}
}
