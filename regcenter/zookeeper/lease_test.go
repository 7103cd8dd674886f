package zookeeper

import (
	"encoding/binary"
	"testing"
	"time"
)

func frame(xid int32, body int) []byte {
	b := make([]byte, 8+body)
	binary.BigEndian.PutUint32(b[0:4], uint32(4+body))
	binary.BigEndian.PutUint32(b[4:8], uint32(xid))
	return b
}

func connectResponse(timeoutMs int32, session int64) []byte {
	b := make([]byte, 4+36)
	binary.BigEndian.PutUint32(b[0:4], 36)
	binary.BigEndian.PutUint32(b[8:12], uint32(timeoutMs))
	binary.BigEndian.PutUint64(b[12:20], uint64(session))
	return b
}

// The lease runs from when an answered request was sent, whatever the
// chunking of the bytes read; notifications renew nothing.
func TestLeaseRunsFromTheAnsweredRequestsSendTime(t *testing.T) {
	z := &Center{epoch: time.Now()}
	c := &observedConn{z: z}
	c.sent = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}
	var stream []byte
	stream = append(stream, connectResponse(4000, 0x42)...)
	stream = append(stream, frame(-1, 17)...) // a watch notification
	stream = append(stream, frame(5, 3)...)   // answers the second write
	stream = append(stream, frame(-2, 0)...)  // a ping answer: the third
	for size := 1; size <= len(stream); size++ {
		z.lastRead.Store(0)
		c.sent = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}
		c.first, c.have, c.skip = false, 0, 0
		var seen []int64
		for i := 0; i < len(stream); i += size {
			c.parse(stream[i:min(i+size, len(stream))])
			seen = append(seen, z.lastRead.Load())
		}
		if got := time.Duration(z.lastRead.Load()); got != 30*time.Millisecond {
			t.Fatalf("chunks of %d: lease base %v, want the third request's send time 30ms (steps %v)", size, got, seen)
		}
		if z.SessionTimeout() != 4*time.Second || z.connected.Load() != 0x42 {
			t.Fatalf("chunks of %d: timeout %v session %x", size, z.SessionTimeout(), z.connected.Load())
		}
		if len(c.sent) != 0 {
			t.Fatalf("chunks of %d: %d requests left unanswered", size, len(c.sent))
		}
	}
	// Answers read long after their requests were sent (a frozen process
	// reading its socket buffer) leave a lapsed lease lapsed.
	z.lastRead.Store(0)
	c.sent = []time.Duration{time.Millisecond}
	c.parse(frame(-2, 0))
	if got := time.Duration(z.lastRead.Load()); got != time.Millisecond {
		t.Fatalf("stale answer moved the lease base to %v", got)
	}
}
