package extension

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUnsent pins what unsent reads of the MCP SDK's errors: a call on a session that is closing
// already, which the SDK never writes, is unsent (the SDK says so only in its text, which this
// test would see change); a write that met a closed pipe is unsent; a connection that ended under
// a call it wrote, or any other failure, is not.
func TestUnsent(t *testing.T) {
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = cs.Close()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "x", Arguments: map[string]any{}})
	if err == nil || !unsent(err) {
		t.Errorf("a call on a closed session: %v, want an error unsent takes for one never written", err)
	}
	if !unsent(&pipeError{}) {
		t.Error("a write that met a closed pipe is not unsent")
	}
	for _, e := range []error{io.EOF, mcp.ErrConnectionClosed, errors.New("client is closing")} {
		if unsent(e) {
			t.Errorf("unsent(%v) = true, want false: the call may have been read", e)
		}
	}
}

type pipeError struct{}

func (*pipeError) Error() string { return "write |1: broken pipe" }
func (*pipeError) Unwrap() error { return syscall.EPIPE }
