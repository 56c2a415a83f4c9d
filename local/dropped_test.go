package local

import (
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
)

// TestGateAnswersDropped: the connection the gate drops is answered with api.Dropped, which krad
// tells apart from an environment that is down (its hint then says to try again, not to watch for
// an environment), and whose message says what the client can do.
func TestGateAnswersDropped(t *testing.T) {
	b := startBus(t, nil, func(c *Config) { c.PendingConns = 1 })
	// The gate takes one connection that has not sent its line: of two, one is dropped.
	answers := make(chan string, 2)
	for range 2 {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		go func() {
			got, _ := io.ReadAll(c)
			answers <- string(got)
		}()
	}
	got := <-answers // the dropped one's, at once; the other's line would take 10 s to time out
	var a api.Answer
	if err := json.Unmarshal([]byte(got), &a); err != nil {
		t.Fatalf("the dropped connection got %q: %v", got, err)
	}
	e, _ := a.Err().(*api.Error)
	if !api.IsDropped(e) || !strings.HasSuffix(e.Message, "write the whole line at once after connecting, and try again") {
		t.Errorf("the dropped connection got %q, want api.Dropped saying what to do", got)
	}
}
