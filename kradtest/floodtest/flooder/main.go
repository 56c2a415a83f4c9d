// Command flooder is package floodtest's flood in a process of its own, which floodtest runs as
// another user: it opens -conns TCP connections to -addr, writes -partial bytes of a line with no
// newline to each, prints "opened N" (or "error: …" when a connection cannot be opened), and
// holds them all until its stdin ends.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	addr := flag.String("addr", "", "the TCP address to flood")
	conns := flag.Int("conns", 0, "how many connections")
	partial := flag.Int("partial", 0, "bytes each connection writes, with no newline")
	flag.Parse()
	line := bytes.Repeat([]byte("x"), *partial)
	held := make([]net.Conn, 0, *conns)
	for range *conns {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			fmt.Printf("error: %v\n", err)
			break
		}
		held = append(held, c)
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write(line) // fails once the server has dropped it
	}
	if len(held) == *conns {
		fmt.Printf("opened %d\n", len(held))
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range held {
		c.Close()
	}
}
