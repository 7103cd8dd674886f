package dispatchmetrics_test

// The tests open the history and the dispatcher on both databases.
import (
	_ "github.com/shardjob/shardjob/store/postgres"
	_ "github.com/shardjob/shardjob/store/sqlite"
)
