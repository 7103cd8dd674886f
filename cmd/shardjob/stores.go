package main

// The command opens the history and the dispatcher on whichever database
// its flags or its YAML name, so it links both.
import (
	_ "github.com/shardjob/shardjob/store/postgres"
	_ "github.com/shardjob/shardjob/store/sqlite"
)
