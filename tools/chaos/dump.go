package main

import (
	"context"
	"fmt"
	"io"
	"path"
	"sort"

	"github.com/shardjob/shardjob/regcenter"
)

// dumpTree writes the job's ZooKeeper subtree (each node's path, ephemeral
// owner and data) to w: the state the instances left behind, for
// diagnosing a run.
func dumpTree(ctx context.Context, rc regcenter.Center, root string, w io.Writer) error {
	var walk func(p string, depth int) error
	walk = func(p string, depth int) error {
		data, st, err := rc.Get(ctx, p)
		if err != nil {
			fmt.Fprintf(w, "%s: %v\n", p, err)
			return nil
		}
		line := p
		if st.EphemeralOwner != 0 {
			line += fmt.Sprintf(" [ephemeral 0x%x]", st.EphemeralOwner)
		}
		if len(data) > 0 {
			if len(data) > 300 {
				data = append(data[:300:300], "..."...)
			}
			line += " = " + string(data)
		}
		fmt.Fprintln(w, line)
		if depth > 8 {
			return nil
		}
		kids, err := rc.Children(ctx, p)
		if err != nil {
			fmt.Fprintf(w, "%s children: %v\n", p, err)
			return nil
		}
		sort.Strings(kids)
		for _, k := range kids {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := walk(path.Join(p, k), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root, 0)
}
