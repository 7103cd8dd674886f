package backend

import (
	"fmt"

	"github.com/shardjob/shardjob/regcenter"
)

// MaxNodeBytes returns cfg's limit on a write, or the default.
func MaxNodeBytes(cfg regcenter.Config) int {
	if cfg.MaxNodeBytes <= 0 {
		return regcenter.DefaultMaxNodeBytes
	}
	return cfg.MaxNodeBytes
}

// CheckNodeSize refuses op's data for node p with regcenter.ErrTooLarge
// when it is larger than limit.
func CheckNodeSize(limit int, op, p string, data []byte) error {
	if len(data) <= limit {
		return nil
	}
	return fmt.Errorf("%w: %s %s: data is %d bytes, %d over the limit of %d (maxNodeBytes)",
		regcenter.ErrTooLarge, op, p, len(data), len(data)-limit, limit)
}

// CheckMultiSize refuses, with regcenter.ErrTooLarge, a transaction whose
// operations carry together more than limit bytes of data, paths and
// per-operation headers, as regcenter.MultiBytes counts them: ZooKeeper
// receives them as one request. The error names the operation with the
// most data.
func CheckMultiSize(limit int, ops []regcenter.Op) error {
	total := 0
	biggest, biggestAt := 0, -1
	for i, op := range ops {
		total += regcenter.MultiBytes(op)
		if n := dataLen(op); n > biggest {
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
		regcenter.ErrTooLarge, len(ops), total, total-limit, limit, where)
}

// dataLen is the data op writes.
func dataLen(op regcenter.Op) int {
	switch o := op.(type) {
	case regcenter.CreateOp:
		return len(o.Data)
	case regcenter.SetOp:
		return len(o.Data)
	}
	return 0
}

// OpPath returns the path of the node op concerns ("" for an op of no
// kind regcenter knows).
func OpPath(op regcenter.Op) string {
	switch o := op.(type) {
	case regcenter.CreateOp:
		return o.Path
	case regcenter.SetOp:
		return o.Path
	case regcenter.DeleteOp:
		return o.Path
	case regcenter.CheckOp:
		return o.Path
	}
	return ""
}

// CleanOps returns ops with each path made canonical by clean (CleanPath,
// or a center's stricter form of it), for a Multi to send. A path clean
// refuses is a *regcenter.MultiError naming its op, as the caller wrote
// it; an op of a type it does not know is an error too.
func CleanOps(ops []regcenter.Op, clean func(string) (string, error)) ([]regcenter.Op, error) {
	out := make([]regcenter.Op, len(ops))
	for i, op := range ops {
		cp, err := clean(OpPath(op))
		switch o := op.(type) {
		case regcenter.CreateOp:
			o.Path, out[i] = cp, o
		case regcenter.SetOp:
			o.Path, out[i] = cp, o
		case regcenter.DeleteOp:
			o.Path, out[i] = cp, o
		case regcenter.CheckOp:
			o.Path, out[i] = cp, o
		default:
			return nil, fmt.Errorf("regcenter: unknown op %T", op)
		}
		if err != nil {
			return nil, &regcenter.MultiError{Index: i, Op: op, Err: err}
		}
	}
	return out, nil
}

// ReadBatches splits paths, in order, into the batches of a bulk read
// (regcenter.Center.GetMany): each at most maxPaths paths, and at most
// maxBytes of paths with readOverhead bytes for each (one path alone may
// be more).
func ReadBatches(paths []string, maxPaths, maxBytes int) [][]string {
	var out [][]string
	start, size := 0, 0
	for i, p := range paths {
		n := len(p) + readOverhead
		if i > start && (i-start >= maxPaths || size+n > maxBytes) {
			out = append(out, paths[start:i:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(paths) {
		out = append(out, paths[start:])
	}
	return out
}

// readOverhead is what one read of a bulk read adds to its request
// beside its path: its header, the path's length and flags.
const readOverhead = 16
