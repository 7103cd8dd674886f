package errhandler

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/smtp"
	"strings"
	"time"
)

// EmailConfig configures an Email handler.
type EmailConfig struct {
	// Addr is the SMTP server, host:port (587 for submission). Required.
	Addr string
	// From is the sender's address. Required.
	From string
	// To are the recipients. At least one.
	To []string
	// Username and Password authenticate with PLAIN after STARTTLS; no
	// authentication when Username is "".
	Username, Password string
	// SubjectPrefix starts every subject; "" means "[shardjob]".
	SubjectPrefix string
	// TLS configures STARTTLS; nil verifies the server's certificate
	// against the system's roots for the host of Addr. STARTTLS is
	// required: a server that does not offer it gets no mail.
	TLS *tls.Config
	// Dial connects to Addr; nil means a plain net.Dialer. A job file's
	// email handler gives one that refuses private addresses (see
	// jobfile's allowPrivateAddresses).
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// Email sends each failure as a plain-text mail over SMTP with STARTTLS.
// The connection is bounded by the handler's context. Create it with
// NewEmail.
type Email struct{ c EmailConfig }

// NewEmail validates c and returns its handler.
func NewEmail(c EmailConfig) (*Email, error) {
	host, _, err := net.SplitHostPort(c.Addr)
	switch {
	case c.Addr == "":
		return nil, fmt.Errorf("%w: email: addr is required (host:port)", ErrInvalidConfig)
	case err != nil || host == "":
		return nil, fmt.Errorf("%w: email: addr %q must be host:port", ErrInvalidConfig, c.Addr)
	case len(c.To) == 0:
		return nil, fmt.Errorf("%w: email: to needs at least one recipient", ErrInvalidConfig)
	}
	for _, a := range append([]string{c.From}, c.To...) {
		if _, err := mail.ParseAddress(a); err != nil || strings.ContainsAny(a, "\r\n") {
			return nil, fmt.Errorf("%w: email: %q is not a mail address", ErrInvalidConfig, a)
		}
	}
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = "[shardjob]"
	}
	if c.TLS == nil {
		c.TLS = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	c.To = append([]string(nil), c.To...)
	return &Email{c: c}, nil
}

// Handle mails f.
func (e *Email) Handle(ctx context.Context, f Failure) error {
	if err := e.send(ctx, f); err != nil {
		return fmt.Errorf("%w: email via %s: %w", ErrDelivery, e.c.Addr, err)
	}
	return nil
}

func (e *Email) send(ctx context.Context, f Failure) (err error) {
	dial := e.c.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(ctx, "tcp", e.c.Addr)
	if err != nil {
		return err
	}
	// The SMTP client has no context: the deadline and a cancel watcher
	// bound the whole conversation.
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return errors.Join(err, conn.Close())
		}
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	host, _, _ := net.SplitHostPort(e.c.Addr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return errors.Join(err, conn.Close())
	}
	defer func() {
		if cerr := c.Close(); cerr != nil && err == nil && !errors.Is(cerr, net.ErrClosed) {
			err = cerr
		}
	}()
	if ok, _ := c.Extension("STARTTLS"); !ok {
		return errors.New("the server does not offer STARTTLS")
	}
	if err := c.StartTLS(e.c.TLS); err != nil {
		return fmt.Errorf("STARTTLS: %w", err)
	}
	if e.c.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", e.c.Username, e.c.Password, host)); err != nil {
			return fmt.Errorf("authenticating: %w", err)
		}
	}
	if err := c.Mail(e.c.From); err != nil {
		return err
	}
	for _, to := range e.c.To {
		if err := c.Rcpt(to); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(e.message(f)); err != nil {
		return errors.Join(err, w.Close())
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// message renders f as a mail. Header values come from the config and the
// job's name (a ZooKeeper node name: no line breaks), never from the
// error text, which goes in the body.
func (e *Email) message(f Failure) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\n", e.c.From)
	fmt.Fprintf(&b, "To: %s\r\n", strings.Join(e.c.To, ", "))
	if f.IsAlert() {
		fmt.Fprintf(&b, "Subject: %s job %s alert: %s\r\n", e.c.SubjectPrefix, oneLine(f.Job), oneLine(string(f.Alert)))
	} else {
		fmt.Fprintf(&b, "Subject: %s job %s item %d failed\r\n", e.c.SubjectPrefix, oneLine(f.Job), f.Item)
	}
	fmt.Fprintf(&b, "Date: %s\r\n", time.Now().Format(time.RFC1123Z))
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n")
	fmt.Fprintf(&b, "Job:         %s\r\nItem:        %d\r\nTask:        %s\r\nServer:      %s\r\nKind:        %s\r\n", f.Job, f.Item, f.TaskID, f.ServerID, f.Kind)
	fmt.Fprintf(&b, "Fire time:   %s\r\nRan:         %s to %s\r\nTimed out:   %v\r\nIn a row:    %d\r\n\r\n", f.FireTime.Format(time.RFC3339), f.Begin.Format(time.RFC3339), f.End.Format(time.RFC3339), f.TimedOut, f.Consecutive)
	// Lines starting with '.' are escaped by net/smtp's data writer.
	for _, line := range strings.Split(f.Error, "\n") {
		b.WriteString(strings.TrimRight(line, "\r"))
		b.WriteString("\r\n")
	}
	return []byte(b.String())
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
