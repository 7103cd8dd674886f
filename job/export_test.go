package job

// WithProcessForTest makes the scheduler claim its server id as the process
// on host with pid (a token of its own drawn for it), so that a test can
// stand one scheduler for another process, dead or alive.
func WithProcessForTest(host string, pid int) Option {
	return func(o *options) error {
		o.process = &holder{Host: host, PID: pid, Process: newToken(), Token: newToken()}
		return nil
	}
}
