//go:build race

package main

// raceEnabled: this binary was built with -race, so the instances are too
// unless -race=false says otherwise.
const raceEnabled = true
