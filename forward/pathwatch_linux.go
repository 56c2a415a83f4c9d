package forward

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// networkSettle is how long watchNetwork waits after the kernel's first message of a change for
// the rest of it (a link that comes back brings its addresses and routes, a dozen messages),
// and how often at most it calls notify.
const networkSettle = 200 * time.Millisecond

// networkGroups are the rtnetlink groups whose messages say the way out may have changed: links,
// addresses and routes, IPv4 and IPv6 (not neighbours, which change all the time).
const networkGroups = unix.RTMGRP_LINK | unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR |
	unix.RTMGRP_IPV4_ROUTE | unix.RTMGRP_IPV6_ROUTE

// watchNetwork calls notify once a change of this computer's links, addresses or routes has
// settled, until stop is closed. The messages are not read past their arrival: any of these
// groups' is reason enough for a check, which costs a keepalive. Where the kernel refuses the
// socket (a sandbox without netlink), it watches nothing: keepalives still notice a dead path.
func watchNetwork(stop <-chan struct{}, notify func(string)) {
	f, err := openRoute()
	if err != nil {
		return
	}
	watchRoute(stop, f, notify)
}

// openRoute opens a socket on the kernel's rtnetlink messages of networkGroups, in the network
// namespace of the calling thread.
func openRoute() (*os.File, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: networkGroups}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// A non-blocking descriptor goes through Go's poller, so that Close ends a Read under way.
	return os.NewFile(uintptr(fd), "rtnetlink"), nil
}

// watchRoute is watchNetwork on f, an openRoute socket, which it closes when stop is closed.
func watchRoute(stop <-chan struct{}, f *os.File, notify func(string)) {
	messages := make(chan struct{}, 1)
	go func() {
		defer close(messages)
		buf := make([]byte, 32<<10)
		for {
			// ENOBUFS says messages were lost for a full buffer: a change all the same.
			if _, err := f.Read(buf); err != nil && !errors.Is(err, unix.ENOBUFS) {
				return
			}
			select {
			case messages <- struct{}{}:
			default:
			}
		}
	}()
	defer f.Close()
	var settled <-chan time.Time
	for {
		select {
		case <-stop:
			return
		case _, ok := <-messages:
			if !ok {
				return
			}
			if settled == nil {
				settled = time.After(networkSettle)
			}
		case <-settled:
			settled = nil
			notify("this computer's network changed")
		}
	}
}
