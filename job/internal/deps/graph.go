package deps

import (
	"fmt"
	"slices"
	"strings"
)

// Parents returns the job names in after, a Config.After: comma
// separated, each trimmed; nil when after is blank. Names are not checked
// here (package job's Validate does).
func Parents(after string) []string {
	if strings.TrimSpace(after) == "" {
		return nil
	}
	var out []string
	for p := range strings.SplitSeq(after, ",") {
		out = append(out, strings.TrimSpace(p))
	}
	return out
}

// Node is a job of the graph: its name and the jobs it runs after.
type Node struct {
	Name    string
	Parents []string
}

// Problem is one problem of the graph: the index, in the nodes checked,
// of the job it is reported on, and what is wrong, in words that follow
// the job's "after" field.
type Problem struct {
	Node   int
	Detail string
}

// Check returns the problems of the graph of nodes, the jobs of one
// scheduler or one file, in this order: for each node in turn, each of
// its parents that is not one of nodes, or whose edge refuses it (edge
// returns a non-empty detail, given the indexes of the dependent and of
// its parent); then each cycle, once, from its first job in name order,
// reported on the job the cycle closes on and named parent before
// dependent ("a cycle: a → b → a"). Of two nodes with one name, the last
// is the one a parent's name stands for.
func Check(nodes []Node, edge func(dependent, parent int) string) []Problem {
	byName := make(map[string]int, len(nodes))
	for i, n := range nodes {
		byName[n.Name] = i
	}
	var out []Problem
	for i, n := range nodes {
		for _, p := range n.Parents {
			j, ok := byName[p]
			if !ok {
				out = append(out, Problem{i, fmt.Sprintf("no job %q here: a parent must be defined with its dependents", p)})
			} else if d := edge(i, j); d != "" {
				out = append(out, Problem{i, d})
			}
		}
	}
	state := map[string]int{} // 0 unseen, 1 on the path, 2 done
	var path []string
	var visit func(name string)
	visit = func(name string) {
		state[name] = 1
		path = append(path, name)
		for _, p := range nodes[byName[name]].Parents {
			if _, ok := byName[p]; !ok {
				continue
			}
			switch state[p] {
			case 0:
				visit(p)
			case 1:
				i := slices.Index(path, p)
				cycle := append(slices.Clone(path[i:]), p)
				slices.Reverse(cycle) // parent before dependent
				out = append(out, Problem{byName[p], "a cycle: " + strings.Join(cycle, " → ")})
			}
		}
		path = path[:len(path)-1]
		state[name] = 2
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if state[n] == 0 {
			visit(n)
		}
	}
	return out
}
