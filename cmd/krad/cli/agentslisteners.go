package cli

import (
	"fmt"
	"strconv"

	"github.com/krad-ade/krad/listenowner"
)

// agentsListenersCommand is `krad-ade-agents listeners PORT`, hidden: the app's check of its
// forward on an SSH host runs it in the connect's sh, once krad is installed there, to learn who
// listens on the forward's port without reading /proc/net/tcp (see listenowner.WriteListeners).
func agentsListenersCommand() *command {
	return &command{
		name:    "listeners",
		summary: "print the TCP sockets listening on a port (for krad-ade, over SSH)",
		hidden:  true,
		help: `
Prints the TCP sockets (IPv4 and IPv6) that listen on PORT, as the lines of /proc/net/tcp with
its header, for krad-ade's check of its forward on an SSH host. It asks the kernel for the
listening sockets only (sock_diag), where /proc/net/tcp walks its whole table of connections;
where netlink is refused, it reads /proc/net/tcp and tcp6. It exits 0 when it printed the
table, 5 when PORT is not a port, 1 when the sockets cannot be read.`,
		run: func(x *invocation, args []string) error {
			if len(args) != 1 {
				return x.usageError("%s takes one argument, the port", x.path)
			}
			port, err := strconv.ParseUint(args[0], 10, 16)
			if err != nil || port == 0 {
				return x.usageError("%s: %s is not a port (1 to 65535)", x.path, quote(args[0]))
			}
			if _, err := listenowner.WriteListeners(x.stdout, uint16(port)); err != nil {
				return fmt.Errorf("list the sockets listening on port %d: %w", port, err)
			}
			return nil
		},
	}
}
