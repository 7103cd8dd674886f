package job_test

import (
	"testing"

	"github.com/shardjob/shardjob/internal/testing/depcheck"
)

// A program that schedules jobs links no reader of job files: the file,
// its environment overrides and its sections are package jobfile's. The
// YAML decoder job keeps is for the config document stored in the
// registry, which every instance reads.
func TestLinksNoJobFileReader(t *testing.T) {
	depcheck.Forbid(t, ".", "github.com/spf13/viper", "github.com/shardjob/shardjob/jobfile")
	depcheck.Require(t, ".", "go.yaml.in/yaml/v3")
}
