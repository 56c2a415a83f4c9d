package forward_test

import (
	"context"
	"errors"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/forward/knownhosts"
	"github.com/krad-ade/krad/forward/sshconfig"
	"golang.org/x/crypto/ssh"
)

// An SSH environment kept up until the program is interrupted, its forward leading to a local
// listener. A failure a person must fix is logged with its hint; SIGHUP tries again at once.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	var c *forward.Conn
	c = forward.New(forward.Config{
		Host: "buildbox",
		Target: func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", "127.0.0.1:52144")
		},
		OnConnect: func(ctx context.Context, client *ssh.Client, fwd forward.Forward, _ *forward.Shell) error {
			if fwd.Changed != nil {
				log.Printf("buildbox: %s", fwd.Changed)
			}
			return nil
		},
		OnStatus: func(s forward.Status) {
			if s.State != forward.Failed {
				log.Printf("buildbox: %s", s)
				return
			}
			var hk *knownhosts.HostKeyError
			switch {
			case errors.As(s.Err, &hk) && hk.Unknown():
				log.Printf("buildbox is not in known_hosts: %s", hk.Hint)
			case errors.Is(s.Err, forward.ErrForwardingForbidden):
				log.Printf("buildbox forbids forwarding: %v", s.Err)
			default:
				log.Printf("buildbox: %v", s.Err)
			}
		},
		OnWarning: func(w sshconfig.Warning) { log.Printf("ssh config: %s", w) },
	})
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			c.Retry()
		}
	}()
	if err := c.Run(ctx); err != nil {
		log.Fatal(err) // a Config without Host or Target
	}
}
