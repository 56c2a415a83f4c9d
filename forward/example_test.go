package forward_test

import (
	"context"
	"errors"
	"log"
	"net"
	"os/signal"
	"syscall"

	"github.com/krad-ade/krad/forward"
	"golang.org/x/crypto/ssh"
)

// An SSH environment kept up until the program is interrupted, its forward leading to a local
// listener.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	c := forward.New(forward.Config{
		Host: "buildbox",
		Target: func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", "127.0.0.1:52144")
		},
		OnConnect: func(ctx context.Context, client *ssh.Client, fwd forward.Forward) error {
			if fwd.Changed != nil {
				log.Printf("buildbox: %s", fwd.Changed)
			}
			return nil
		},
		OnStatus:  func(s forward.Status) { log.Printf("buildbox: %s", s) },
		OnWarning: func(w forward.Warning) { log.Printf("ssh config: %s", w) },
	})
	if err := c.Run(ctx); err != nil {
		var hk *forward.HostKeyError
		switch {
		case errors.As(err, &hk) && hk.Unknown():
			log.Printf("buildbox is not in known_hosts: %s", hk.Hint)
		case errors.Is(err, forward.ErrForwardingForbidden):
			log.Printf("buildbox forbids forwarding: %v", err)
		default:
			log.Printf("buildbox: %v", err)
		}
	}
}
