package webhook

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"github.com/slackask/slackask/interaction"
)

// AllowPrivateEnv names the server setting that lets callbacks reach
// loopback, link-local, private and cloud metadata addresses (Guard's
// AllowPrivate).
const AllowPrivateEnv = "SLACKASK_CALLBACK_ALLOW_PRIVATE"

// Guard decides which addresses a callback may reach. A callback URL is
// chosen by whoever creates an ask, so without a guard slackask would POST
// wherever it is told from inside its own network (SSRF).
//
// Never allowed: schemes other than http and https, the unspecified
// address (0.0.0.0, ::, which reach the local host), 0.0.0.0/8, multicast,
// broadcast, and hosts whose last label is a number (2130706433, 127.1,
// 0x7f.1: resolvers read them as IPv4 addresses).
//
// Allowed only with AllowPrivate: loopback; link-local, which holds the
// cloud metadata address 169.254.169.254; the private ranges (RFC 1918
// 10/8, 172.16/12, 192.168/16, and IPv6 ULA fc00::/7, which holds AWS's
// metadata address fd00:ec2::254) — an internal service is the classic
// target, so these are refused by default too; shared address space
// 100.64.0.0/10 (carrier NAT, and Alibaba's metadata 100.100.100.200);
// 192.0.0.0/24 (Oracle's metadata 192.0.0.192); 198.18.0.0/15; the
// reserved 240.0.0.0/4; the deprecated IPv4-compatible ::/96 and
// site-local fec0::/10; local-use NAT64 64:ff9b:1::/48; and the names
// localhost, *.localhost and metadata.google.internal. IPv4 addresses
// inside IPv6 (::ffff:a.b.c.d, 64:ff9b::a.b.c.d) are judged as the IPv4
// address.
//
// CheckURL is the cheap check when a URL is accepted; Control checks every
// address actually dialled, after name resolution, so a name that resolves
// to a refused address (DNS rebinding) is refused too. The zero Guard
// refuses private addresses.
type Guard struct {
	AllowPrivate bool
}

// RefusedError is a guard's refusal. It wraps an INVALID_QUESTION error
// with the same message, so interaction.ErrorCode(err) and ErrorMessage
// work on it; Deliver reports it as a permanent failure.
type RefusedError struct {
	URL    string     // the URL refused, "" when refused at dial time
	Addr   netip.Addr // the address refused, invalid when refused by name
	Reason string     // e.g. "a loopback address"
	coded  *interaction.Error
}

func refused(rawURL string, addr netip.Addr, reason string, private bool) *RefusedError {
	e := &RefusedError{URL: rawURL, Addr: addr, Reason: reason}
	msg := "callback "
	switch {
	case rawURL != "":
		msg += fmt.Sprintf("URL %q", rawURL)
	default:
		msg += "address " + addr.String()
	}
	if rawURL != "" && addr.IsValid() {
		msg += fmt.Sprintf(": %s", addr)
	}
	msg += " refused: " + reason
	if private {
		msg += " (" + AllowPrivateEnv + "=true allows it)"
	}
	e.coded = interaction.Errorf(interaction.InvalidQuestion, "%s", msg)
	return e
}

func (e *RefusedError) Error() string { return "webhook: " + e.coded.Message }

// Unwrap returns the coded error.
func (e *RefusedError) Unwrap() error { return e.coded }

// refusedNames are refused by name (with AllowPrivate, allowed), so a URL
// that names them is refused before any lookup.
var refusedNames = []string{"localhost", "metadata.google.internal"}

// specialPrefixes are not public unicast, beyond what netip's predicates
// name; each is allowed only with AllowPrivate.
var specialPrefixes = []struct {
	p      netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier NAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible IPv6 address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
}

var (
	zeroNet = netip.MustParsePrefix("0.0.0.0/8")
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
)

// CheckURL checks a callback URL before any connection: its syntax
// (interaction.CheckCallbackURL), its scheme, and its host when that is an
// IP literal or a refused name. A host name that passes here is checked
// again, address by address, when it is dialled (Control). It returns nil
// or a *RefusedError (or a coded INVALID_QUESTION error for bad syntax).
func (g Guard) CheckURL(raw string) error {
	if err := interaction.CheckCallbackURL(raw); err != nil {
		return fmt.Errorf("webhook: %w", interaction.Errorf(interaction.InvalidQuestion, "callbackUrl: %v", err))
	}
	u, err := url.Parse(raw)
	if err != nil { // CheckCallbackURL parsed it already
		return fmt.Errorf("webhook: %w", interaction.Errorf(interaction.InvalidQuestion, "callbackUrl %q is not a URL", raw))
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if addr, err := netip.ParseAddr(host); err == nil {
		if reason, private := g.judge(addr); reason != "" {
			return refused(raw, addr, reason, private)
		}
		return nil
	}
	if numericTLD(host) {
		return refused(raw, netip.Addr{}, "a numeric host that is not a dotted-quad or IPv6 address", false)
	}
	if g.AllowPrivate {
		return nil
	}
	for _, n := range refusedNames {
		if host == n || strings.HasSuffix(host, "."+n) {
			return refused(raw, netip.Addr{}, "the name "+n+" is a local or metadata host", true)
		}
	}
	return nil
}

// numericTLD reports whether host's last label is a number (decimal, octal
// or 0x hex). No top-level domain is numeric, and resolvers read such hosts
// ("2130706433", "127.1", "0x7f.1") as IPv4 addresses in inet_aton's
// forms, which netip does not parse.
func numericTLD(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if h, ok := strings.CutPrefix(last, "0x"); ok {
		last = h
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// CheckAddr checks one address; it returns nil or a *RefusedError.
func (g Guard) CheckAddr(addr netip.Addr) error {
	if reason, private := g.judge(addr); reason != "" {
		return refused("", addr, reason, private)
	}
	return nil
}

// Control is a net.Dialer Control function: it refuses to connect to an
// address CheckAddr refuses. It runs after name resolution, for each
// address tried.
func (g Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook: dial %s %q: not an address and port: %w", network, address, err)
	}
	return g.CheckAddr(ap.Addr())
}

// judge returns why addr is refused ("" when it is not) and whether
// AllowPrivate would allow it.
func (g Guard) judge(addr netip.Addr) (reason string, private bool) {
	addr = addr.WithZone("").Unmap()
	if nat64.Contains(addr) {
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case !addr.IsValid():
		return "not an address", false
	case addr.IsUnspecified():
		return "the unspecified address", false
	case addr.Is4() && zeroNet.Contains(addr):
		return "a 0.0.0.0/8 address", false
	case addr.IsMulticast():
		return "a multicast address", false
	case addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address", false
	}
	if g.AllowPrivate {
		return "", false
	}
	switch {
	case addr.IsLoopback():
		return "a loopback address", true
	case addr.IsLinkLocalUnicast():
		return "a link-local address (cloud metadata lives there)", true
	case addr.IsPrivate():
		return "a private address", true
	}
	for _, s := range specialPrefixes {
		if s.p.Contains(addr) {
			return s.reason, true
		}
	}
	if !addr.IsGlobalUnicast() {
		return "not a global unicast address", true
	}
	return "", false
}
