package regcenter

import (
	"context"
	"errors"
	"fmt"
)

// Op is one operation of a [Center.Multi] transaction: a [CreateOp],
// [SetOp], [DeleteOp] or [CheckOp].
type Op interface {
	path() string
	String() string
}

// CreateOp creates a node. Parents are not created inside a transaction.
type CreateOp struct {
	Path string
	Data []byte
	Mode Mode
}

// SetOp sets a node's data if its version matches (-1: any).
type SetOp struct {
	Path    string
	Data    []byte
	Version int32
}

// DeleteOp deletes a node if its version matches (-1: any).
type DeleteOp struct {
	Path    string
	Version int32
}

// CheckOp fails the transaction unless the node exists with this version.
// Checking an ephemeral node that its owner never modifies (version 0) fences
// a transaction on that owner's session: once the session ends the node is
// gone and the check fails.
type CheckOp struct {
	Path    string
	Version int32
}

func (o CreateOp) path() string { return o.Path }
func (o SetOp) path() string    { return o.Path }
func (o DeleteOp) path() string { return o.Path }
func (o CheckOp) path() string  { return o.Path }

// String describes the op.
func (o CreateOp) String() string { return "create " + o.Path }

// String describes the op.
func (o SetOp) String() string { return fmt.Sprintf("set %s (version %d)", o.Path, o.Version) }

// String describes the op.
func (o DeleteOp) String() string { return fmt.Sprintf("delete %s (version %d)", o.Path, o.Version) }

// String describes the op.
func (o CheckOp) String() string { return fmt.Sprintf("check %s (version %d)", o.Path, o.Version) }

// MultiError says which operation made a transaction fail. Nothing of the
// transaction was applied. It unwraps to the operation's error, so
// errors.Is(err, ErrNodeExists) works.
type MultiError struct {
	// Index is the failed op's position in the transaction.
	Index int
	// Op is the failed op.
	Op Op
	// Err is why it failed.
	Err error
}

// Error describes the failure.
func (e *MultiError) Error() string {
	return fmt.Sprintf("regcenter: transaction failed at op %d (%s): %v", e.Index, e.Op, e.Err)
}

// Unwrap returns the failed op's error.
func (e *MultiError) Unwrap() error { return e.Err }

// MultiDropping applies ops in one transaction on c; when an op fails in
// a way drop accepts (a delete of a node already gone, a create of one
// already there), the transaction is sent again without it.
func MultiDropping(ctx context.Context, c Center, ops []Op, drop func(Op, error) bool) error {
	for len(ops) > 0 {
		err := c.Multi(ctx, ops...)
		var me *MultiError
		if err == nil || !errors.As(err, &me) || !drop(me.Op, me.Err) {
			return err
		}
		ops = append(ops[:me.Index:me.Index], ops[me.Index+1:]...)
	}
	return nil
}
