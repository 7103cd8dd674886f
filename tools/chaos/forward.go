package main

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// forwarder relays TCP connections from listeners on one address to
// ZooKeeper members on 127.0.0.1: the partitionable instance, inside its
// network namespace, reaches the ensemble only through it.
type forwarder struct {
	lns []net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startForwarder listens on listenIP, one port per target (the target's
// port when free, else any), and returns the listening addresses in target
// order.
func startForwarder(listenIP string, targets []string) (*forwarder, []string, error) {
	f := &forwarder{conns: map[net.Conn]struct{}{}}
	var addrs []string
	for _, t := range targets {
		_, port, err := net.SplitHostPort(t)
		if err != nil {
			f.close()
			return nil, nil, err
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(listenIP, port))
		if err != nil {
			ln, err = net.Listen("tcp", net.JoinHostPort(listenIP, "0"))
		}
		if err != nil {
			f.close()
			return nil, nil, err
		}
		f.lns = append(f.lns, ln)
		addrs = append(addrs, ln.Addr().String())
		f.wg.Add(1)
		go f.accept(ln, t)
	}
	return f, addrs, nil
}

func (f *forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

func (f *forwarder) accept(ln net.Listener, target string) {
	defer f.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		f.wg.Add(1)
		go f.relay(c, target)
	}
}

func (f *forwarder) relay(client net.Conn, target string) {
	defer f.wg.Done()
	if !f.track(client) {
		client.Close()
		return
	}
	defer f.untrack(client)
	defer client.Close()
	server, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		return // member down: the client moves on to another
	}
	if !f.track(server) {
		server.Close()
		return
	}
	defer f.untrack(server)
	defer server.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Either side ending ends both, as a broken path would.
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
}

// close stops listening and drops every relayed connection.
func (f *forwarder) close() {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	for _, ln := range f.lns {
		ln.Close()
	}
	f.wg.Wait()
}
