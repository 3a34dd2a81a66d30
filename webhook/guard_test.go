package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/webhook"
)

// Never allowed, whatever AllowPrivate says.
var alwaysRefused = []string{
	"file:///etc/passwd",
	"ftp://example.com/hook",
	"gopher://example.com/",
	"//example.com/hook",
	"http:///hook",
	"http://user:pw@example.com/hook",
	"http://0.0.0.0:8080/",
	"http://0.1.2.3/",
	"http://[::]:8080/",
	"http://224.0.0.1/",
	"http://[ff02::1]/",
	"http://255.255.255.255/",
	"http://2130706433/",
	"http://127.1/",
	"http://0x7f.1/",
	"http://0x7f000001:8080/",
	"http://017700000001/",
	"http://foo.123/",
	"not a url",
	"",
}

// Refused by default, allowed with AllowPrivate.
var privateURLs = []string{
	"http://127.0.0.1/hook",
	"http://127.1.2.3:9000/hook",
	"http://[::1]:8080/hook",
	"http://[::ffff:127.0.0.1]/hook",
	"http://169.254.169.254/latest/meta-data/",
	"http://[fe80::1%25eth0]/",
	"http://[fd00:ec2::254]/latest/meta-data/",
	"http://[64:ff9b::a9fe:a9fe]/", // 169.254.169.254 through NAT64
	"http://10.0.0.1/hook",
	"http://172.16.0.1/hook",
	"http://192.168.1.1/hook",
	"http://[fc00::1]/hook",
	"http://100.100.100.200/latest/meta-data/",
	"http://192.0.0.192/opc/v1/",
	"http://localhost:8080/hook",
	"http://LOCALHOST./hook",
	"http://app.localhost/hook",
	"http://metadata.google.internal/computeMetadata/v1/",
	"https://Metadata.Google.Internal./",
}

// Allowed by the pre-check: public addresses and names (never dialled
// here).
var publicURLs = []string{
	"https://8.8.8.8/hook",
	"http://93.184.215.14:8080/hook",
	"https://[2001:4860:4860::8888]/hook",
	"https://hooks.example.com/slackask?x=1",
	"https://localhost.example.com/hook",
	"https://123.example.com/hook",
	"https://hooks.0xcafe.dev/",
}

func TestGuardCheckURL(t *testing.T) {
	for _, allow := range []bool{false, true} {
		g := webhook.Guard{AllowPrivate: allow}
		for _, u := range alwaysRefused {
			if err := g.CheckURL(u); interaction.ErrorCode(err) != interaction.InvalidQuestion {
				t.Errorf("AllowPrivate=%v: CheckURL(%q) = %v, want INVALID_QUESTION", allow, u, err)
			}
		}
		for _, u := range privateURLs {
			err := g.CheckURL(u)
			switch {
			case allow && err != nil:
				t.Errorf("AllowPrivate: CheckURL(%q) = %v, want nil", u, err)
			case !allow:
				var ref *webhook.RefusedError
				if !errors.As(err, &ref) || interaction.ErrorCode(err) != interaction.InvalidQuestion {
					t.Errorf("CheckURL(%q) = %v, want a *RefusedError with INVALID_QUESTION", u, err)
				}
			}
		}
		for _, u := range publicURLs {
			if err := g.CheckURL(u); err != nil {
				t.Errorf("AllowPrivate=%v: CheckURL(%q) = %v, want nil", allow, u, err)
			}
		}
	}
}

func TestGuardMessageNamesTheSwitch(t *testing.T) {
	err := webhook.Guard{}.CheckURL("http://169.254.169.254/")
	const want = `callback URL "http://169.254.169.254/": 169.254.169.254 refused: a link-local address (cloud metadata lives there) (SLACKASK_CALLBACK_ALLOW_PRIVATE=true allows it)`
	if got := interaction.ErrorMessage(err); got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
	// A refusal the switch cannot lift does not offer it.
	err = webhook.Guard{AllowPrivate: true}.CheckURL("http://0.0.0.0/")
	if got, want := interaction.ErrorMessage(err), `callback URL "http://0.0.0.0/": 0.0.0.0 refused: the unspecified address`; got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
}

func TestGuardCheckAddr(t *testing.T) {
	for _, c := range []struct {
		addr           string
		deflt, private bool // allowed by the zero Guard, by AllowPrivate
	}{
		{"8.8.8.8", true, true},
		{"2001:4860:4860::8888", true, true},
		{"127.0.0.1", false, true},
		{"::1", false, true},
		{"169.254.169.254", false, true},
		{"fd00:ec2::254", false, true},
		{"10.0.0.1", false, true},
		{"192.168.1.1", false, true},
		{"fc00::1", false, true},
		{"::ffff:10.0.0.1", false, true},
		{"64:ff9b::808:808", true, true}, // 8.8.8.8 through NAT64
		{"64:ff9b::7f00:1", false, true}, // 127.0.0.1 through NAT64
		{"64:ff9b:1::a00:1", false, true},
		{"::7f00:1", false, true}, // IPv4-compatible 127.0.0.1
		{"fec0::1", false, true},
		{"100.64.0.1", false, true},
		{"fe80::1%eth0", false, true},
		{"0.0.0.0", false, false},
		{"::", false, false},
		{"239.1.1.1", false, false},
		{"255.255.255.255", false, false},
	} {
		a := netip.MustParseAddr(c.addr)
		if err := (webhook.Guard{}).CheckAddr(a); (err == nil) != c.deflt {
			t.Errorf("CheckAddr(%s) = %v, want allowed=%v", a, err, c.deflt)
		}
		if err := (webhook.Guard{AllowPrivate: true}).CheckAddr(a); (err == nil) != c.private {
			t.Errorf("AllowPrivate: CheckAddr(%s) = %v, want allowed=%v", a, err, c.private)
		}
	}
}

// TestGuardControlRefusesAtDial: the dial-time check refuses a loopback
// address whatever name led to it, before any connection is made.
func TestGuardControlRefusesAtDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx := context.Background()
	for _, target := range []string{ln.Addr().String(), net.JoinHostPort("localhost", port)} {
		d := net.Dialer{Control: webhook.Guard{}.Control}
		c, err := d.DialContext(ctx, "tcp", target)
		if err == nil {
			c.Close()
			t.Fatalf("guarded dial of %s succeeded", target)
		}
		var ref *webhook.RefusedError
		if !errors.As(err, &ref) || !ref.Addr.IsLoopback() {
			t.Fatalf("guarded dial of %s: %v, want a *RefusedError for a loopback address", target, err)
		}
	}
	// The sentinel: the first connection the listener sees is this one,
	// so the refused dials never connected.
	d := net.Dialer{Control: webhook.Guard{AllowPrivate: true}.Control}
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("AllowPrivate dial: %v", err)
	}
	defer c.Close()
	got, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if got.RemoteAddr().String() != c.LocalAddr().String() {
		t.Errorf("first accepted connection is from %s, want the allowed dial's %s", got.RemoteAddr(), c.LocalAddr())
	}
}
