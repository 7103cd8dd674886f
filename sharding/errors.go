package sharding

import "errors"

// Sentinel errors returned (wrapped, with details) by this package. Test for
// them with errors.Is.
var (
	// ErrUnknownStrategy is returned by Lookup for a name that is not
	// registered.
	ErrUnknownStrategy = errors.New("sharding: unknown strategy")

	// ErrDuplicateStrategy is returned by Register when the name is already
	// taken, including by a built-in strategy.
	ErrDuplicateStrategy = errors.New("sharding: duplicate strategy name")

	// ErrInvalidStrategy is returned by Register for an empty name or a nil
	// strategy, and by Assign for a nil strategy.
	ErrInvalidStrategy = errors.New("sharding: invalid strategy")

	// ErrInvalidTotalCount is returned when the sharding total count is not
	// in 1..math.MaxInt32 (ElasticJob stores it as a Java int).
	ErrInvalidTotalCount = errors.New("sharding: invalid sharding total count")

	// ErrInvalidServers is returned when the server list contains an empty
	// or a duplicated server id.
	ErrInvalidServers = errors.New("sharding: invalid server list")

	// ErrBadAssignment is returned by Assign when a strategy's result breaks
	// the assignment invariants (see Assign).
	ErrBadAssignment = errors.New("sharding: bad assignment")

	// ErrJobNameHashOverflow is returned by the ROUND_ROBIN strategy for a
	// job name whose Java hashCode is Integer.MIN_VALUE when the number of
	// servers is not a power of two. ElasticJob fails with an
	// IndexOutOfBoundsException in exactly that case; see RoundRobin.
	ErrJobNameHashOverflow = errors.New("sharding: job name hashCode is Integer.MIN_VALUE")
)
