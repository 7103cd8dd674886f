package job

// CheckDependencies checks the dependencies (Config.After) among cfgs as
// the jobs of one job file, or of one scheduler, are checked: every parent
// is one of cfgs, monitored, and fires on the same schedule as its
// dependent, and no job runs after itself through others (the cycle is
// named). It returns nil, or one error naming every problem, each wrapping
// ErrInvalidConfig. Each config is checked alone by Validate; this checks
// only how they meet. place names a job in the errors, given its name, as
// TreeOptions.Place does; nil names it `job "orders-sync"`.
//
// It is what package jobfile checks a job file's jobs with, and a job
// defined at run time among the namespace's other definitions, before it
// is stored and before an instance runs it.
func CheckDependencies(cfgs []Config, place func(name string) string) error {
	if place == nil {
		place = jobPlace
	}
	return joinConfigErrors(dependencyProblems(cfgs, place))
}
