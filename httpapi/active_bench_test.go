package httpapi

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkHealthUnderLoad measures how long GET /healthz takes while the
// server carries the load that starved it once: 1,000 long-polls waiting
// on a pending ask (half GET, half HEAD, each on its own connection) and
// connections that send the start of a request and then nothing, on a
// server behind LimitActive(DefaultMaxActive) as serve runs it: 200 of
// them (fewer than the reading places), and 600 (more: probes wait for one
// to be closed). Each iteration is one probe on a new connection; it
// reports the probes' p50, p99 and max in milliseconds (the goal is under
// 100 ms).
//
//	go test -run '^$' -bench HealthUnderLoad -benchtime 200x ./httpapi/
func BenchmarkHealthUnderLoad(b *testing.B) {
	for _, slowConns := range []int{200, 600} {
		b.Run(fmt.Sprintf("slow=%d", slowConns), func(b *testing.B) { benchHealthUnderLoad(b, 1000, slowConns) })
	}
}

func benchHealthUnderLoad(b *testing.B, polls, slowConns int) {
	f := newFake()
	api := New(notifySvc{f}, Options{})
	createOne(f, api)
	base, _ := serveLimitedLn(b, api, DefaultMaxActive, nil)
	addr := base[len("http://"):]
	var held []net.Conn
	defer func() { closeAll(held) }()
	for i := range polls {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		held = append(held, c)
		method := "GET"
		if i%2 == 1 {
			method = "HEAD"
		}
		if _, err := fmt.Fprintf(c, "%s /v1/asks/ask-1?wait=10m HTTP/1.1\r\nHost: x\r\n\r\n", method); err != nil {
			b.Fatal(err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); api.parkedCount() < polls; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d long-polls parked after 30s", api.parkedCount(), polls)
		}
	}
	held = append(held, dialSlowHeaders(b, addr, slowConns)...)

	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/healthz", nil)
		start := time.Now()
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		lat = append(lat, time.Since(start))
		cancel()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("healthz under load: %v", err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(0, "ns/op")
	closeAll(held)
	held = nil
}
