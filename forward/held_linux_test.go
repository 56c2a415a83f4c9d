package forward

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/netnstest"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// TestLostConnectionResetOnReturn: the host is in a network namespace whose link the test takes
// down, as a laptop's Wi-Fi goes. The connection is found dead while the link is down, and its
// reset waits for the link's return: the host's sshd hears of the old connection's end as the new
// one comes up, ends its session there and then, and the reconnect finds its old port free. No
// stale session has to be looked for and ended, which closing the connection while the link was
// down left to the reconnect: its FIN sat in this computer's kernel behind a retransmission timer
// backed off to seconds.
func TestLostConnectionResetOnReturn(t *testing.T) {
	n := netnstest.New(t)
	e := newEnv(t)
	s := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}, Netns: n.Name, Listen: n.There})
	e.writeConfig(hostBlock("build", s))
	e.trust(s.KnownHostsLine(0))
	cfg := e.cfg("build")
	logs := &logBuffer{t: t}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := run(t, cfg)
	st, i := r.connected(0)
	old := s.Sessions()
	if len(old) == 0 {
		t.Fatal("no sshd session for the connection")
	}

	n.Cut(t)
	lost, j := r.wait(30*time.Second, i+1, func(s Status) bool { return s.State != Connected })
	if !strings.Contains(lost.String(), "no reply within") {
		t.Fatalf("the cut was seen as %q, want the check after the change", lost)
	}
	time.Sleep(time.Second)
	for _, pid := range old {
		if !isSSHD(pid) {
			t.Fatalf("the host's session %d ended while the link was down: nothing can have reached it", pid)
		}
	}
	n.Restore(t)
	st2, _ := r.connected(j)
	if st2.Addr != st.Addr || st2.PortChanged != nil {
		t.Errorf("after the link's return: %v, want the same address %s", st2, st.Addr)
	}
	for _, pid := range old {
		if isSSHD(pid) {
			t.Errorf("the old sshd session %d is still there", pid)
		}
	}
	for _, held := range []string{"the port asked for is taken on the host", "ended the stale sshd session"} {
		if logs.has(held) {
			t.Errorf("the reconnect found the old session holding the port (%q): it was not reset when the path came back", held)
		}
	}
}

// logBuffer is a slog handler's writer that keeps what was logged and passes it to the test's
// log.
type logBuffer struct {
	t  testing.TB
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (l *logBuffer) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), s)
}
