package tcpfault

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo serves lines back until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func roundTrip(c net.Conn, r *bufio.Reader, deadline time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = c.SetDeadline(start.Add(deadline))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	_, err := r.ReadString('\n')
	return time.Since(start), err
}

func TestProxyFaults(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, 5*time.Second); err != nil {
		t.Fatalf("plain round trip: %v", err)
	}

	p.Latency(200 * time.Millisecond)
	if d, err := roundTrip(c, r, 5*time.Second); err != nil || d < 200*time.Millisecond {
		t.Fatalf("with 200 ms latency: round trip %v, %v", d, err)
	}
	p.Latency(0)

	// A blackhole holds the bytes: the read hangs, and the answer comes
	// once it is lifted.
	p.Blackhole(true)
	if _, err := roundTrip(c, r, 300*time.Millisecond); err == nil {
		t.Fatal("a round trip went through the blackhole")
	}
	p.Blackhole(false)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("after the blackhole: %q %v", line, err)
	}

	p.Reset()
	if _, err := roundTrip(c, r, 5*time.Second); err == nil {
		t.Fatal("a reset connection still answers")
	}

	p.Refuse(true)
	// The reset can reach the dialer before its connect returns (it then
	// fails with ECONNRESET): refused either way.
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		defer c2.Close()
		if _, err := roundTrip(c2, bufio.NewReader(c2), 5*time.Second); err == nil {
			t.Fatal("a refused connection answers")
		}
	}
	p.Refuse(false)
	c3, r3 := dial(t, p)
	if _, err := roundTrip(c3, r3, 5*time.Second); err != nil {
		t.Fatalf("after refusing: %v", err)
	}
}
