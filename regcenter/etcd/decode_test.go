package etcd

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// storedSeeds are node values of every form: this layout's headers as the
// writers make them, and values shaped like them that no writer makes.
func storedSeeds() [][]byte {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	ff := bytes.Repeat([]byte{0xFF}, 28)
	legacy := func(version uint32, ctime, mtime, czxid int64) []byte {
		b := make([]byte, legacyLen, legacyLen+1)
		b[0] = headerLegacy
		binary.BigEndian.PutUint32(b[1:], version)
		binary.BigEndian.PutUint64(b[5:], uint64(ctime))
		binary.BigEndian.PutUint64(b[13:], uint64(mtime))
		binary.BigEndian.PutUint64(b[21:], uint64(czxid))
		return append(b, 'x')
	}
	return [][]byte{
		[]byte(header{mtime: now}.encode([]byte("data"))),
		[]byte(header{mtime: now, vbase: 2, czxid: czxidMod}.encode([]byte("data"))),
		[]byte(header{mtime: now, vbase: 1, czxid: 5}.encode(nil)),
		legacy(1, now, now, 0),
		legacy(0, now, now, czxidMod),
		append([]byte{headerSpecial}, ff[:24]...),
		append([]byte{headerSpecial}, ff[:20]...),
		append([]byte{headerPlain}, ff[:8]...),
		append([]byte{headerLegacy}, ff...),
		append([]byte{metaMagic}, ff[:16]...),
		[]byte(encodeMeta(now, 3, 2)),
		[]byte("12"),
		[]byte("-5"),
		[]byte("99999999999"),
		[]byte("{{{ not yaml"),
		nil,
	}
}

// FuzzEtcdDecodeNode: any value in a node key, at any of the key's
// versions and revisions, decodes without a panic and without allocating
// to a stat that makes sense for the key: a version from 0 to MaxInt32
// (the key's etcd version less one without a header), a creation revision from the key's creation to
// its latest write, data that is the value's tail, a time between 1970
// and 9999.
func FuzzEtcdDecodeNode(f *testing.F) {
	for _, v := range storedSeeds() {
		f.Add(v, int64(3), int64(4), int64(9))
		f.Add(v, int64(1), int64(1), int64(1))
	}
	f.Fuzz(func(t *testing.T, value []byte, version, create, mod int64) {
		// What etcd gives for a live key: a version of at least 1 and
		// revisions that are positive and in order.
		version, create = max(version, 1), max(create, 1)
		mod = max(mod, create)
		kv := &mvccpb.KeyValue{Key: []byte("/ns/n/001/x"), Value: value, Version: version, CreateRevision: create, ModRevision: mod}
		var (
			h    header
			zv   int32
			data []byte
		)
		if allocs := testing.AllocsPerRun(1, func() { h, zv, data = decodeNode(kv) }); allocs > 0 {
			t.Fatalf("decodeNode allocated %v times", allocs)
		}
		if zv < 0 {
			t.Fatalf("version %d", zv)
		}
		if h == (header{}) && int64(zv) != min(version-1, math.MaxInt32) {
			t.Fatalf("headerless value at version %d for a key at etcd version %d", zv, version)
		}
		if len(data) > len(value) || !bytes.Equal(data, value[len(value)-len(data):]) {
			t.Fatalf("data %q is not the tail of %q", data, value)
		}
		got, st := statFromKV(kv, nil, 0)
		if !bytes.Equal(got, data) || st.Version != zv || st.DataLength != int32(len(data)) {
			t.Fatalf("statFromKV %q %+v, decodeNode %q %d", got, st, data, zv)
		}
		if h.czxid == czxidMod && h.mtime == 0 {
			t.Fatalf("read as created again over its key with no time: %q", value)
		}
		if st.Czxid < create || st.Czxid > mod {
			t.Fatalf("czxid %d outside the key's revisions [%d, %d]", st.Czxid, create, mod)
		}
		for _, tm := range []time.Time{st.Ctime, st.Mtime} {
			if !tm.IsZero() && (tm.UnixMilli() < 0 || tm.UnixMilli() > maxStoredMillis) {
				t.Fatalf("time %v in the stat", tm)
			}
		}
	})
}

// FuzzEtcdDecodeMeta: any value in a meta key decodes without a panic, in
// without allocating, to a ctime between 1970 and 9999 (or none) and
// a cversion from 0 to MaxInt32.
func FuzzEtcdDecodeMeta(f *testing.F) {
	for _, v := range storedSeeds() {
		f.Add(v, int64(2))
		f.Add(v, int64(1))
	}
	f.Fuzz(func(t *testing.T, value []byte, version int64) {
		kv := &mvccpb.KeyValue{Key: []byte("/ns/c/x"), Value: value, Version: max(version, 1), CreateRevision: 1, ModRevision: 1}
		var (
			ctime int64
			cver  int32
		)
		if allocs := testing.AllocsPerRun(1, func() { ctime, cver = decodeMeta(kv) }); allocs > 0 {
			t.Fatalf("decodeMeta allocated %v times", allocs)
		}
		if cver < 0 || !plausibleMillis(ctime) {
			t.Fatalf("ctime %d, cversion %d", ctime, cver)
		}
	})
}

// TestEtcdHeadersRoundTrip: what the writers store reads back as written.
func TestEtcdHeadersRoundTrip(t *testing.T) {
	now := time.Now().UnixMilli()
	for _, tt := range []struct {
		h       header
		version int64 // the key's etcd version
		create  int64
		mod     int64
		want    int32
	}{
		{header{mtime: now}, 1, 5, 5, 0},
		{header{mtime: now}, 7, 5, 9, 6},
		{header{mtime: now, vbase: 3, czxid: czxidMod}, 4, 5, 9, 0},
		{header{mtime: now, vbase: 3, czxid: 8}, 6, 5, 12, 2},
		{header{mtime: now, vbase: 1}, 3, 5, 12, 1},
		{header{mtime: now, vbase: -1}, 1, 5, 5, 1},           // created and set in one Multi
		{header{mtime: now, vbase: -3, czxid: 4}, 2, 1, 9, 4}, // Sets that shared transactions
	} {
		kv := &mvccpb.KeyValue{Value: []byte(tt.h.encode([]byte("d"))), Version: tt.version, CreateRevision: tt.create, ModRevision: tt.mod}
		h, v, data := decodeNode(kv)
		if h != tt.h || v != tt.want || string(data) != "d" {
			t.Errorf("%+v at version %d: read %+v version %d data %q, want version %d", tt.h, tt.version, h, v, data, tt.want)
		}
	}
	for _, tt := range []struct {
		cver    int32
		version int64
	}{{0, 1}, {5, 1}, {0, 9}, {3, 2}} {
		kv := &mvccpb.KeyValue{Value: []byte(encodeMeta(now, tt.cver, tt.version)), Version: tt.version}
		if ctime, cver := decodeMeta(kv); ctime != now || cver != tt.cver {
			t.Errorf("meta of cversion %d at version %d read as %d, %d", tt.cver, tt.version, ctime, cver)
		}
		// Each child's create or delete puts it again, value kept.
		kv.Version++
		if _, cver := decodeMeta(kv); cver != tt.cver+1 {
			t.Errorf("meta of cversion %d put once more read as %d", tt.cver, cver)
		}
	}
}
