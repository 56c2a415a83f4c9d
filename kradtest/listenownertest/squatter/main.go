// Command squatter is the other user in listenownertest: it listens on a TCP address, and
// reports on stdout what each connection sent it, as a squatter collecting tokens would.
//
//	squatter [-accept=false] [-network tcp6] ADDR
//	squatter -inherited
//
// With -inherited it accepts on the listener passed to it as file descriptor 3 instead. Its first line is "listening ADDR uid N"; then, for each connection, once the client closes
// it or is quiet for the read timeout, "received Q" where Q is what it read, Go-quoted. With
// -accept=false it never accepts, and connections wait in its queue. -network is Go's: tcp6 on
// [::]:PORT listens on IPv6 only (IPV6_V6ONLY), tcp, the default, on both.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

func main() {
	accept := flag.Bool("accept", true, "accept connections and report what they send")
	quiet := flag.Duration("read-timeout", 10*time.Second, "how long a quiet connection is read")
	inherited := flag.Bool("inherited", false, "accept on the listener that is file descriptor 3")
	network := flag.String("network", "tcp", "tcp, tcp4 or tcp6, as Go's net.Listen takes it")
	flag.Parse()
	var ln net.Listener
	var err error
	switch {
	case *inherited && flag.NArg() == 0:
		ln, err = net.FileListener(os.NewFile(3, "inherited listener"))
	case !*inherited && flag.NArg() == 1:
		ln, err = net.Listen(*network, flag.Arg(0))
	default:
		fmt.Fprintln(os.Stderr, "usage: squatter [-accept=false] [-network tcp6] ADDR | squatter -inherited")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "squatter:", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	report("listening %s uid %d", ln.Addr(), os.Getuid())
	if !*accept {
		// Hold the listener until the test kills this process. A sleep, not select {}: with no
		// timer and no other goroutine, Go's runtime may call that a deadlock and exit, as it
		// does under qemu-user (the arm64 build's tests under emulation).
		for {
			time.Sleep(time.Hour)
		}
	}
	for {
		conn, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "squatter:", err)
			os.Exit(1)
		}
		go func() {
			defer conn.Close()
			_ = conn.SetReadDeadline(time.Now().Add(*quiet))
			got, _ := io.ReadAll(conn)
			report("received %q", got)
		}()
	}
}
