package zktest

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy is a TCP forwarder between clients and one ZooKeeper member that can
// simulate a network partition: while blocked, connections stay open but
// no byte flows either way and new connections are accepted but not
// forwarded — what a client sees when a switch drops its packets, or when
// its own process is frozen. Point a client at Addr instead of the member.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	blocked bool
	unblock chan struct{} // closed when unblocked
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to target
// ("host:port").
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, unblock: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.unblock)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Block stops all traffic through the proxy until Unblock.
func (p *Proxy) Block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.blocked {
		p.blocked = true
		p.unblock = make(chan struct{})
	}
}

// Unblock lets traffic flow again.
func (p *Proxy) Unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blocked {
		p.blocked = false
		close(p.unblock)
	}
}

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.blocked {
		p.blocked = false
		close(p.unblock)
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unblock
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(client)
			<-p.gate() // a blocked proxy holds new connections unanswered
			server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
			if err != nil {
				return
			}
			if !p.track(server) {
				return
			}
			defer p.untrack(server)
			done := make(chan struct{}, 2)
			go func() { p.pipe(server, client); done <- struct{}{} }()
			go func() { p.pipe(client, server); done <- struct{}{} }()
			<-done
			client.Close()
			server.Close()
			<-done
		}()
	}
}

// pipe copies src to dst, holding each chunk while the proxy is blocked.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-p.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			return
		}
	}
}
