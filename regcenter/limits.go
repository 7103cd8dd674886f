package regcenter

// Size limits of a write. ZooKeeper refuses a request larger than its
// jute.maxbuffer (1 MiB by default, less one byte) by closing the
// connection, which a client sees as a lost connection; the ZooKeeper
// client refuses to encode one larger than its buffer ("zk: buffer too
// small"). Every backend therefore checks a write first, against
// Config.MaxNodeBytes (a transaction as MultiBytes counts it), and refuses
// it with ErrTooLarge before anything is sent.
const (
	// DefaultMaxNodeBytes is the default of Config.MaxNodeBytes: 1 MiB,
	// ZooKeeper's default jute.maxbuffer, less 4 KiB for the request's
	// header, path and ACL.
	DefaultMaxNodeBytes = 1<<20 - requestOverhead
	// MaxMaxNodeBytes is the largest Config.MaxNodeBytes accepted: the
	// client encodes each request into a buffer of 1.5 MiB.
	MaxMaxNodeBytes = 1536<<10 - requestOverhead

	// requestOverhead is kept free of data in every request.
	requestOverhead = 4 << 10
	// multiOpOverhead is counted for each operation of a Multi on top of
	// its path and data: its header and version or flags.
	multiOpOverhead = 16
)

// MultiBytes returns the size a transaction of ops counts against
// Config.MaxNodeBytes: its operations' data, paths and per-operation
// headers. A caller that splits its writes into transactions sizes them
// with it.
func MultiBytes(ops ...Op) int {
	total := 0
	for _, op := range ops {
		total += opBytes(op)
	}
	return total
}

// opBytes is what one operation of a transaction counts.
func opBytes(op Op) int {
	n := len(op.path()) + multiOpOverhead
	switch o := op.(type) {
	case CreateOp:
		n += len(o.Data)
	case SetOp:
		n += len(o.Data)
	}
	return n
}
