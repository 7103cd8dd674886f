package metrics_test

import (
	"errors"
	"fmt"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/metrics"
)

// The result label of an execution, as shardjob_executions_total counts it.
func ExampleResult() {
	fmt.Println(metrics.Result(nil))
	fmt.Println(metrics.Result(errors.New("row 7: constraint violated")))
	fmt.Println(metrics.Result(fmt.Errorf("item 3: %w", job.ErrExecutionTimeout)))
	// Output:
	// success
	// failure
	// timeout
}
