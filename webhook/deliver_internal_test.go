package webhook

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
)

// TestSendGuardedAtDial: a name that passes the URL's check but resolves
// to a refused address (DNS rebinding) is refused when dialled. send skips
// CheckURL, as if the name had resolved to a public address then.
func TestSendGuardedAtDial(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	u.Host = "localhost:" + u.Port()
	d := NewDeliverer(Options{})
	defer d.CloseIdleConnections()
	r := d.send(t.Context(), u.String(), "ask1", []byte("k"), []byte("{}"))
	var ref *RefusedError
	if r.Outcome != Permanent || !errors.As(r.Err, &ref) || !ref.Addr.IsLoopback() {
		t.Fatalf("send = %+v, want permanent, refused loopback", r)
	}
	open := NewDeliverer(Options{Guard: Guard{AllowPrivate: true}})
	defer open.CloseIdleConnections()
	if r := open.send(t.Context(), u.String(), "ask1", []byte("k"), []byte("{}")); r.Outcome != Delivered {
		t.Fatalf("sentinel send = %+v", r)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("server got %d requests, want only the sentinel", n)
	}
}

// TestNoProxy: a proxy from the environment would dial the callback's
// address for us, past the guard.
func TestNoProxy(t *testing.T) {
	d := NewDeliverer(Options{})
	tr, ok := d.hc.Transport.(*http.Transport)
	if !ok || tr.Proxy != nil {
		t.Fatalf("transport %T has a proxy function", d.hc.Transport)
	}
}
