// Package netpolicy says which network addresses a request the scheduler
// sends on a user's behalf may go to: the dispatcher's webhooks and HTTP
// jobs share it. By default no such request goes to the host's own
// network: loopback, private (RFC 1918, fc00::/7), link-local (the cloud
// metadata address 169.254.169.254 among them), carrier-grade NAT,
// multicast, unspecified and other reserved addresses are refused, and so
// is the name localhost.
//
// A URL is checked twice: its host when it is accepted ([HostWhy]: a
// literal address or localhost), and the address actually dialled, after
// name resolution ([Dialed], from a net.Dialer's Control hook), so a name that
// resolves to a forbidden address — at once, or later (DNS rebinding) — is
// refused before a byte is sent.
package netpolicy

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// forbiddenPrefixes are the ranges refused besides those netip's
// predicates name (loopback, RFC 1918 and fc00::/7, link-local, multicast,
// unspecified); IPv4-mapped IPv6 addresses are checked as the IPv4
// address they carry.
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

// Why says why a may not be dialled ("a loopback address", ...), or ""
// if it may.
func Why(a netip.Addr) string {
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

// HostWhy checks a URL's host (url.URL.Hostname: a name or a literal
// address) before any resolution. It says why the host is refused — it
// names localhost, or it is a forbidden literal address — or "" if it may
// be used, a name then being checked again when dialled ([Dialed]).
func HostWhy(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return "it names localhost"
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if why := Why(a); why != "" {
			return a.String() + " is " + why
		}
	} else if ip := net.ParseIP(h); ip != nil {
		// Forms netip refuses but net accepts.
		a, _ := netip.AddrFromSlice(ip)
		if why := Why(a); why != "" {
			return a.String() + " is " + why
		}
	}
	return ""
}

// Dialed checks the address a net.Dialer's Control hook is given ("ip:port",
// after name resolution): it returns an error naming the address and why
// it is refused ("resolved to 169.254.169.254, a link-local address"), or
// nil. The caller wraps it with its own sentinel error and advice.
func Dialed(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("cannot read the dialled address %q: %v", address, err)
	}
	if why := Why(ap.Addr()); why != "" {
		return fmt.Errorf("resolved to %s, %s", ap.Addr(), why)
	}
	return nil
}

// Control is a net.Dialer Control hook that refuses what [Dialed]
// refuses, wrapping its error with wrap (nil: as it is).
func Control(wrap func(error) error) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		err := Dialed(address)
		if err != nil && wrap != nil {
			err = wrap(err)
		}
		return err
	}
}

// Dialer is a net.Dialer (30 s to connect, 30 s keep-alive) that dials
// only what [Dialed] allows, wrapping its refusal with wrap (nil: as it
// is).
func Dialer(wrap func(error) error) *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: Control(wrap)}
}

// Transport is http.DefaultTransport's settings under the policy: every
// dial checked by [Dialer] with wrap, and no proxy, since the address
// checked must be the one called.
func Transport(wrap func(error) error) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = Dialer(wrap).DialContext
	return t
}
