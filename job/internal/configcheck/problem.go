package configcheck

// Kind is the kind of a problem, which package job makes its sentinel:
// Invalid is its ErrInvalidConfig alone, the others a more specific one.
type Kind int

const (
	// Invalid is a problem no more specific kind applies to.
	Invalid Kind = iota
	// BadName is a job name missing or unusable as a registry node name.
	BadName
	// BadCount is an item count, or a count of records per item, out of
	// its bounds.
	BadCount
	// NeverFires is a calendar that leaves its cron no fire.
	NeverFires
)

// Add is told one problem: the document key concerned ("" if none), its
// kind, what it concerns (`cron "* * *"`) and what is wrong with it.
type Add func(key string, kind Kind, subject, detail string)

// invalid is add for problems of kind Invalid.
func (add Add) invalid(key, subject, detail string) { add(key, Invalid, subject, detail) }
