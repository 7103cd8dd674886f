package process

import (
	"os"
	"testing"
)

// A holder found holding our id is an earlier life of this scheduler when
// it is this scheduler (its token), this pid's earlier process, or a
// process of this host that is gone; never another scheduler of this
// process, a live process of this host, or a process elsewhere.
func TestEarlierLifeOf(t *testing.T) {
	me := This()
	other := This() // another scheduler of this process
	for _, c := range []struct {
		name  string
		found Holder
		want  bool
	}{
		{"this scheduler", me, true},
		{"another scheduler of this process", other, false},
		{"this pid before a restart", Holder{Host: me.Host, PID: me.PID, Process: NewToken(), Token: NewToken()}, true},
		{"a live process of this host", Holder{Host: me.Host, PID: os.Getppid(), Process: NewToken(), Token: NewToken()}, false},
		{"a process of this host that is gone", Holder{Host: me.Host, PID: -1, Process: NewToken(), Token: NewToken()}, true},
		{"a process elsewhere", Holder{Host: me.Host + ".elsewhere", PID: me.PID, Process: NewToken(), Token: NewToken()}, false},
		{"an older version that does not say", Holder{}, false},
	} {
		if got := c.found.EarlierLifeOf(me); got != c.want {
			t.Errorf("%s: EarlierLifeOf = %v, want %v", c.name, got, c.want)
		}
	}
	if me.Process != other.Process || me.Token == other.Token {
		t.Errorf("two schedulers of one process: process tokens %q, %q (want one), own tokens %q, %q (want two)", me.Process, other.Process, me.Token, other.Token)
	}
}
