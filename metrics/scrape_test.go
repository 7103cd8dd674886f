package metrics_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/shardjob/shardjob/metrics/internal/scrapetest"
)

func scrapeURL(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	return scrapetest.Scrape(t, url)
}
