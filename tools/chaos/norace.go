//go:build !race

package main

// raceEnabled: this binary was built without -race, so the instances are
// too unless -race says otherwise.
const raceEnabled = false
