package dispatch

import (
	"fmt"
	"net/url"
	"syscall"

	"github.com/shardjob/shardjob/internal/netpolicy"
)

// webhookPolicy is where notices may go.
type webhookPolicy struct {
	insecure bool // plain http allowed (Config.AllowInsecureWebhooks)
	private  bool // loopback, private, link-local... allowed (Config.AllowPrivateWebhooks)
}

// maxWebhookURL bounds a webhook URL's length.
const maxWebhookURL = 2048

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
	if why := netpolicy.HostWhy(u.Hostname()); why != "" {
		return fmt.Errorf("%w: %q: %s; set Config.AllowPrivateWebhooks to allow it", ErrWebhookAddress, raw, why)
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
	if err := netpolicy.Dialed(address); err != nil {
		return fmt.Errorf("%w: the webhook host %v; set Config.AllowPrivateWebhooks to allow it", ErrWebhookAddress, err)
	}
	return nil
}
