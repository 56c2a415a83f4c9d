package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/listenowner"
)

// agentsListenersCommand is `krad-ade-agents listeners [--of PID --sections PREFIX] PORT`,
// hidden: the app's check of its forward on an SSH host runs it in the connect's sh, once krad
// is installed there, to learn who listens on the forward's port without reading
// /proc/net/tcp (see listenowner.WriteListeners), and, with --of, our uid and the sockets of the
// sshd session without starting id and ls as well.
func agentsListenersCommand() *command {
	var (
		of       int
		sections string
	)
	return &command{
		name:    "listeners",
		summary: "print the TCP sockets listening on a port (for krad-ade, over SSH)",
		hidden:  true,
		help: `
Prints the TCP sockets (IPv4 and IPv6) that listen on PORT, as the lines of /proc/net/tcp with
its header, for krad-ade's check of its forward on an SSH host. It asks the kernel for the
listening sockets only (sock_diag), where /proc/net/tcp walks its whole table of connections;
where netlink is refused, it reads /proc/net/tcp and tcp6.

With --of PID and --sections PREFIX, it prints three parts, each after a line of PREFIX and its
name: "uid", this process's user id (as id -u prints it); "fd", the sockets process PID holds
(as ls -l /proc/PID/fd ends their lines; none when its descriptors are not ours to read); and
"tcp", the table.

It exits 0 when it printed the table, 5 when an argument is not what it should be, 1 when the
sockets cannot be read.`,
		flags: func(fs *pflag.FlagSet) {
			fs.IntVar(&of, "of", 0, "also print our uid and the sockets process `PID` holds")
			fs.StringVar(&sections, "sections", "", "with --of: start each part with a line `PREFIX` and its name")
		},
		run: func(x *invocation, args []string) error {
			if len(args) != 1 {
				return x.usageError("%s takes one argument, the port", x.path)
			}
			port, err := strconv.ParseUint(args[0], 10, 16)
			if err != nil || port == 0 {
				return x.usageError("%s: %s is not a port (1 to 65535)", x.path, quote(args[0]))
			}
			if (of != 0) != (sections != "") {
				return x.usageError("%s: --of and --sections go together", x.path)
			}
			if of < 0 || strings.ContainsAny(sections, "\n\r") {
				return x.usageError("%s: --of takes a process id, --sections one line", x.path)
			}
			return writeListeners(x.stdout, uint16(port), of, sections)
		},
	}
}

// writeListeners is the listeners command's output.
func writeListeners(w io.Writer, port uint16, of int, sections string) error {
	if of != 0 {
		if _, err := fmt.Fprintf(w, "%suid\n%d\n%sfd\n", sections, os.Getuid(), sections); err != nil {
			return err
		}
		if _, err := listenowner.WriteSocketsOf(w, of); err != nil {
			return fmt.Errorf("list the sockets of process %d: %w", of, err)
		}
		if _, err := fmt.Fprintf(w, "%stcp\n", sections); err != nil {
			return err
		}
	}
	if _, err := listenowner.WriteListeners(w, port); err != nil {
		return fmt.Errorf("list the sockets listening on port %d: %w", port, err)
	}
	return nil
}
