package job_test

import (
	"testing"

	"github.com/shardjob/shardjob/internal/testing/depcheck"
)

// A program that schedules jobs links no reader of job files and no YAML
// library: the file, its environment overrides and its sections are
// package jobfile's, and the config document stored in the registry,
// which every instance reads, is read and written by internal/docsubset.
func TestLinksNoJobFileReader(t *testing.T) {
	depcheck.Forbid(t, ".", "github.com/spf13/viper", "github.com/shardjob/shardjob/jobfile",
		"go.yaml.in/yaml/v3", "gopkg.in/yaml.v3", "github.com/shardjob/shardjob/internal/yamldoc")
}
