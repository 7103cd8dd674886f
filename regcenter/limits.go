package regcenter

import "fmt"

// Size limits of a write. ZooKeeper refuses a request larger than its
// jute.maxbuffer (1 MiB by default, less one byte) by closing the
// connection, which a client sees as a lost connection; the ZooKeeper
// client refuses to encode one larger than its buffer ("zk: buffer too
// small"). Writes are therefore checked here first, against
// Config.MaxNodeBytes, and refused with ErrTooLarge before anything is
// sent.
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

// maxNodeBytes returns the configured limit, or the default.
func (c Config) maxNodeBytes() int {
	if c.MaxNodeBytes <= 0 {
		return DefaultMaxNodeBytes
	}
	return c.MaxNodeBytes
}

// checkNodeSize refuses op's data for node p when it is larger than limit.
func checkNodeSize(limit int, op, p string, data []byte) error {
	if len(data) <= limit {
		return nil
	}
	return fmt.Errorf("%w: %s %s: data is %d bytes, %d over the limit of %d (maxNodeBytes)",
		ErrTooLarge, op, p, len(data), len(data)-limit, limit)
}

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

// checkMultiSize refuses a transaction whose operations carry, together,
// more than limit bytes of data, paths and per-operation headers: ZooKeeper
// receives them as one request.
func checkMultiSize(limit int, ops []Op) error {
	total := 0
	biggest, biggestAt := 0, -1
	for i, op := range ops {
		n := opBytes(op)
		total += n
		if n -= len(op.path()) + multiOpOverhead; n > biggest {
			biggest, biggestAt = n, i
		}
	}
	if total <= limit {
		return nil
	}
	where := ""
	if biggestAt >= 0 {
		where = fmt.Sprintf("; the largest is %s with %d bytes of data", ops[biggestAt], biggest)
	}
	return fmt.Errorf("%w: transaction of %d ops is %d bytes, %d over the limit of %d (maxNodeBytes)%s",
		ErrTooLarge, len(ops), total, total-limit, limit, where)
}
