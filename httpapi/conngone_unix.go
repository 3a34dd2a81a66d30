//go:build unix

package httpapi

import (
	"errors"
	"net"
	"syscall"
)

// connGone reports whether the peer of c has closed or reset the
// connection, without blocking: it reads what has arrived (into buf,
// discarding it) until the read would block, EOF or an error. A
// connection it cannot look into (no file descriptor) is never gone.
func connGone(c net.Conn, buf []byte) bool {
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		c = nc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	err = rc.Read(func(fd uintptr) bool {
		for range 8 { // a caller still sending is alive; read the rest next time
			n, err := syscall.Read(int(fd), buf)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case errors.Is(err, syscall.EAGAIN):
				return true
			case err != nil || n == 0:
				gone = true
				return true
			}
		}
		return true // never wait
	})
	return gone || err != nil
}
