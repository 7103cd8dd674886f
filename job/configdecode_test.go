package job

import "testing"

func TestDecodeConfigDefaultsAndTypes(t *testing.T) {
	c, err := DecodeConfig([]byte(`
name: orders-sync
cron: "*/5 * * * * *"
shardingTotalCount: 0x4
jobParameter: 42
description: 2024-01-01
maxTimeDiff: 0
`))
	if err != nil {
		t.Fatal(err)
	}
	want := validConfigForTest()
	want.JobParameter = "42"
	want.Description = "2024-01-01"
	if c != want {
		t.Errorf("DecodeConfig = %+v, want %+v", c, want)
	}
}

func TestDecodeConfigStrict(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantIs  []error
		wantMsg []string
	}{
		{"empty node", "", nil, []string{"config: document is empty"}},
		{"blank node", "  \n# only a comment\n", nil, []string{"document is empty"}},
		{"null document", "~", nil, []string{"document is empty"}},
		{"garbage bytes", "\x00\xff\xfe{[", nil, []string{"invalid YAML"}},
		{"unbalanced", "name: [a\ncron: x", nil, []string{"invalid YAML"}},
		{"scalar document", "orders-sync", nil, []string{"must be a mapping", `the string "orders-sync"`}},
		{"list document", "- a\n- b\n", nil, []string{"must be a mapping", "a list"}},
		{"two documents", "name: a\n---\nname: b\n", nil, []string{"more than one document"}},
		{"case typo", "name: orders-sync\ncron: '*/5 * * * * *'\nshardingTotalcount: 4\n",
			[]error{ErrUnknownKey},
			[]string{`job "orders-sync": unknown key "shardingTotalcount" at line 3 (did you mean "shardingTotalCount"?)`}},
		{"unknown key far from any", "name: orders-sync\ncron: '@hourly'\nshardingTotalCount: 1\nowner: me\n",
			[]error{ErrUnknownKey}, []string{`unknown key "owner" at line 4`}},
		{"handler is not a config key", "name: a\ncron: '@hourly'\nshardingTotalCount: 1\nhandler: h\n",
			[]error{ErrUnknownKey}, []string{`unknown key "handler"`}},
		{"repeated key", "name: a\ncron: '@hourly'\nshardingTotalCount: 1\nname: b\n",
			nil, []string{`key "name" at line 4: repeats the key at line 1`}},
		{"count as string", "name: a\ncron: '@hourly'\nshardingTotalCount: four\n",
			[]error{ErrInvalidShardingCount}, []string{`job "a": shardingTotalCount at line 3: must be an integer, got the string "four"`}},
		{"count quoted", "name: a\ncron: '@hourly'\nshardingTotalCount: '4'\n",
			[]error{ErrInvalidShardingCount}, []string{`must be an integer, got the string "4"`}},
		{"count float", "name: a\ncron: '@hourly'\nshardingTotalCount: 4.5\n",
			[]error{ErrInvalidShardingCount}, []string{"must be an integer, got 4.5"}},
		{"count huge", "name: a\ncron: '@hourly'\nshardingTotalCount: 99999999999999999999\n",
			[]error{ErrInvalidShardingCount}, []string{"shardingTotalCount at line 3"}},
		{"bool quoted", "name: a\ncron: '@hourly'\nshardingTotalCount: 1\nfailover: 'true'\n",
			nil, []string{`failover at line 4: must be true or false, got the string "true"`}},
		{"bool empty", "name: a\ncron: '@hourly'\nshardingTotalCount: 1\ndisabled:\n",
			nil, []string{"disabled at line 4: must be true or false, got no value"}},
		{"string empty", "name: a\ncron:\nshardingTotalCount: 1\n",
			[]error{ErrInvalidCron}, []string{`cron at line 2: has no value`}},
		{"string list", "name:\n  - a\n  - b\ncron: '@hourly'\nshardingTotalCount: 1\n",
			[]error{ErrInvalidName}, []string{"name at line 1: must be a string, got a list"}},
		{"duration without unit", "name: a\ncron: '@hourly'\nshardingTotalCount: 1\nmaxTimeDiff: 5\n",
			nil, []string{`maxTimeDiff at line 4: "5" is not a duration`}},
		{"bad duration", "name: a\ncron: '@hourly'\nshardingTotalCount: 1\nreconcileInterval: soon\n",
			nil, []string{`reconcileInterval at line 4: "soon" is not a duration`}},
		{"bad misfire", "name: a\ncron: '@hourly'\nshardingTotalCount: 1\nmisfire: never\n",
			nil, []string{`job "a": misfire "never" at line 4: must be "once" or "skip"`}},
		{"invalid cron", "name: a\ncron: '*/5 * * *'\nshardingTotalCount: 1\n",
			[]error{ErrInvalidCron}, []string{`job "a": cron "*/5 * * *" at line 2: expected exactly 6 fields`}},
		{"missing everything", "description: nothing else\n",
			[]error{ErrInvalidName, ErrInvalidCron, ErrInvalidShardingCount},
			[]string{"job (no name): name is required", "cron is required", "shardingTotalCount 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := DecodeConfig([]byte(tt.doc))
			assertConfigError(t, err, tt.wantIs, tt.wantMsg)
			if c != (Config{}) {
				t.Errorf("DecodeConfig returned %+v with its error", c)
			}
		})
	}
}

func TestDecodeConfigMonitorExecution(t *testing.T) {
	base := "name: a\ncron: '@hourly'\nshardingTotalCount: 1\n"
	for doc, unmonitored := range map[string]bool{
		base:                             false,
		base + "monitorExecution: true":  false,
		base + "monitorExecution: false": true,
	} {
		c, err := DecodeConfig([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if c.Unmonitored != unmonitored {
			t.Errorf("%q: Unmonitored = %v, want %v", doc, c.Unmonitored, unmonitored)
		}
	}
}
