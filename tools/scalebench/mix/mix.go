// Package mix draws the jobs of the scale benchmark (tools/scalebench):
// a namespace of many jobs as an application has them, most firing hourly
// or daily, a few every second, each with 1 to MaxItems sharding items.
// The draw depends on the seed and the counts only, so the benchmark and
// every one of its instance processes compute the same jobs.
package mix

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MaxItems is the most sharding items a drawn job has.
const MaxItems = 100

// Class is how often a job fires.
type Class int

// The classes of jobs.
const (
	// Second fires every second.
	Second Class = iota
	// Hourly fires once an hour, at a minute and second drawn per job.
	Hourly
	// Daily fires once a day, at an hour, minute and second drawn per job.
	Daily
)

// String names the class.
func (c Class) String() string {
	switch c {
	case Second:
		return "second"
	case Hourly:
		return "hourly"
	case Daily:
		return "daily"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// HourlyShare is the share of the jobs that do not fire every second that
// fire hourly; the rest fire daily.
const HourlyShare = 0.7

// Job is one drawn job.
type Job struct {
	// Name is the job's name: "s" and its index, six digits or more.
	Name string
	// Cron is its schedule, with seconds.
	Cron string
	// Items is its sharding item count, 1..MaxItems.
	Items int
	// Class says how often it fires.
	Class Class
}

// Generate draws n jobs from seed. fastPercent of them (rounded to the
// nearest job) fire every second, the others hourly (HourlyShare) or
// daily; which jobs are fast is drawn too. Item counts are log-uniform
// over 1..MaxItems (as many jobs of 1–9 items as of 10–100), so that most
// jobs have few items, as an application's do; the mean is about 21.
func Generate(seed uint64, n int, fastPercent float64) []Job {
	r := rand.New(rand.NewPCG(seed, 0x5ca1eb))
	fast := FastCount(n, fastPercent)
	// The fast jobs are the first of a random permutation.
	isFast := make([]bool, n)
	for _, i := range r.Perm(n)[:fast] {
		isFast[i] = true
	}
	jobs := make([]Job, n)
	for i := range jobs {
		j := Job{Name: fmt.Sprintf("s%06d", i), Items: drawItems(r)}
		switch {
		case isFast[i]:
			j.Class, j.Cron = Second, "* * * * * *"
		case r.Float64() < HourlyShare:
			j.Class, j.Cron = Hourly, fmt.Sprintf("%d %d * * * *", r.IntN(60), r.IntN(60))
		default:
			j.Class, j.Cron = Daily, fmt.Sprintf("%d %d %d * * *", r.IntN(60), r.IntN(60), r.IntN(24))
		}
		jobs[i] = j
	}
	return jobs
}

// FastCount is how many of n jobs fire every second at fastPercent: the
// nearest whole number, at least 1 when fastPercent is above 0 and n is.
func FastCount(n int, fastPercent float64) int {
	if n <= 0 || fastPercent <= 0 {
		return 0
	}
	f := int(math.Round(float64(n) * fastPercent / 100))
	return min(max(f, 1), n)
}

// drawItems draws an item count log-uniformly over 1..MaxItems.
func drawItems(r *rand.Rand) int {
	x := math.Exp(r.Float64() * math.Log(MaxItems+1))
	return min(max(int(x), 1), MaxItems)
}

// Units is the jobs' items together: what the namespace places.
func Units(jobs []Job) int {
	n := 0
	for _, j := range jobs {
		n += j.Items
	}
	return n
}
