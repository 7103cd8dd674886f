package dispatch

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// webhookPolicy is where notices may go.
type webhookPolicy struct {
	insecure bool // plain http allowed (Config.AllowInsecureWebhooks)
	private  bool // loopback, private, link-local... allowed (Config.AllowPrivateWebhooks)
}

// maxWebhookURL bounds a webhook URL's length.
const maxWebhookURL = 2048

// forbiddenPrefixes are the ranges no notice goes to unless private
// addresses are allowed, besides those netip's predicates name (loopback,
// RFC 1918 and fc00::/7, link-local, multicast, unspecified); IPv4-mapped
// IPv6 addresses are checked as the IPv4 address they carry.
var forbiddenPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT (some clouds' metadata services)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001::/23"),      // IETF protocol assignments (Teredo, ORCHID...)
	netip.MustParsePrefix("2002::/16"),      // 6to4: embeds any IPv4 address
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64: embeds any IPv4 address
}

// forbiddenAddr says why a notice may not go to a, or "" if it may.
func forbiddenAddr(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "a link-local address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	for _, p := range forbiddenPrefixes {
		if p.Contains(a) {
			return "in the reserved range " + p.String()
		}
	}
	return ""
}

// checkURL refuses a webhook URL the policy forbids: not an absolute
// http(s) URL, plain http, credentials in it, or a host that is a
// forbidden literal address or "localhost". A name that resolves to a
// forbidden address is refused when dialled (control).
func (p webhookPolicy) checkURL(raw string) error {
	if len(raw) > maxWebhookURL {
		return fmt.Errorf("%w: the URL is %d bytes, over %d", ErrWebhookAddress, len(raw), maxWebhookURL)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%w: %q is not an absolute http(s) URL", ErrWebhookAddress, raw)
	}
	if u.User != nil {
		return fmt.Errorf("%w: %q carries credentials; the secret signs notices instead", ErrWebhookAddress, redact(u))
	}
	if u.Scheme != "https" && !p.insecure {
		return fmt.Errorf("%w: %q is plain http; use https, or set Config.AllowInsecureWebhooks", ErrWebhookAddress, raw)
	}
	if p.private {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("%w: %q names localhost; set Config.AllowPrivateWebhooks to allow it", ErrWebhookAddress, raw)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if why := forbiddenAddr(a); why != "" {
			return fmt.Errorf("%w: %q: %s is %s; set Config.AllowPrivateWebhooks to allow it", ErrWebhookAddress, raw, a, why)
		}
	} else if ip := net.ParseIP(host); ip != nil {
		// Forms netip refuses but net accepts.
		a, _ := netip.AddrFromSlice(ip)
		if why := forbiddenAddr(a); why != "" {
			return fmt.Errorf("%w: %q: %s is %s; set Config.AllowPrivateWebhooks to allow it", ErrWebhookAddress, raw, a, why)
		}
	}
	return nil
}

func redact(u *url.URL) string {
	c := *u
	c.User = url.User("REDACTED")
	return c.String()
}

// control is the dialer's hook: it sees the address after name
// resolution, so a name that resolves to a forbidden address is refused
// before any byte is sent.
func (p webhookPolicy) control(network, address string, _ syscall.RawConn) error {
	if p.private {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read the dialled address %q: %v", ErrWebhookAddress, address, err)
	}
	if why := forbiddenAddr(ap.Addr()); why != "" {
		return fmt.Errorf("%w: the webhook host resolved to %s, %s; set Config.AllowPrivateWebhooks to allow it", ErrWebhookAddress, ap.Addr(), why)
	}
	return nil
}
