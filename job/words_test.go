package job

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The scheduler's own logs and errors run on every registry, so they say
// "registry", not "zookeeper": an etcd user reading "not connected to
// zookeeper" looks for a ZooKeeper they never ran. A message may name
// ZooKeeper only beside etcd (a choice between the two).
func TestMessagesOnSharedPathsNameNoRegistryOfTheirOwn(t *testing.T) {
	dirs := []string{".", "internal/book", "internal/health", "internal/instance", "internal/reconcile", "internal/prepare", "internal/leader", "internal/reshard", "internal/failover", "internal/flags", "../election", "../sharding", "../failover", "../listener", "../dispatch"}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || !isMessageCall(call.Fun) {
					return true
				}
				for _, arg := range call.Args {
					lit, ok := arg.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						continue
					}
					low := strings.ToLower(s)
					if (strings.Contains(low, "zookeeper") || strings.Contains(low, " zk ")) && !strings.Contains(low, "etcd") {
						t.Errorf("%s: %q names ZooKeeper on a path every registry takes: say the registry", fset.Position(lit.Pos()), s)
					}
				}
				return true
			})
		}
	}
}

// isMessageCall reports whether fun is a call whose string arguments a
// user reads: a logger's method, fmt.Errorf, errors.New.
func isMessageCall(fun ast.Expr) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	switch sel.Sel.Name {
	case "Debug", "Info", "Warn", "Error", "Log", "LogAttrs", "Errorf", "New", "Printf", "Println", "Print":
		return true
	}
	return false
}
