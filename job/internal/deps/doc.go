// Package deps holds the dependencies between jobs (Config.After): the
// graph of which job runs after which, checked where all its jobs are
// known. Package job reads each Config, hands the graph here as names
// (a Node per job), and judges each edge itself — whether a parent keeps
// records to wait on and fires on its dependent's schedule — through the
// function Check is given; it makes each Problem a config error on the
// job named.
//
// It owns:
//
//   - the graph (graph.go): Parents, the names a Config.After lists;
//     Check, the parents missing, the edges refused and each cycle, named
//     once, in an order that does not depend on a map's.
//
// It may import the standard library; nothing of package job. It keeps
// no state and starts nothing.
package deps
