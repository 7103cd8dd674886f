// Command firewalk walks a fire's path through package job's source and
// counts its stops and its returns: how the code a fire runs is laid out
// in files.
//
//	go run ./tools/firewalk                       # from (*runner).fireScheduled to (*runner).writeCompletion
//	go run ./tools/firewalk -v                    # and every stop, in order
//	go run ./tools/firewalk -from fireTriggered -to writeCompletion
//
// The walk starts at the entry function and follows the calls of each
// function it reaches in the order they appear in its source (a call
// inside a function literal counts as its enclosing function's), each to a
// function or method declared in the package, depth first, each function
// once, until it reaches the target. Calls through interfaces or function
// values are not followed: the walk is what a reader following the calls
// meets. A stop is a function the walk reaches; a return is a stop in a
// file the walk had already left.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

func main() {
	pkgPath := flag.String("pkg", "github.com/shardjob/shardjob/job", "the package walked")
	from := flag.String("from", "runner.fireScheduled", "the entry: Type.method or function")
	to := flag.String("to", "runner.writeCompletion", "where the walk ends: Type.method or function")
	verbose := flag.Bool("v", false, "print every stop")
	flag.Parse()
	if err := run(*pkgPath, *from, *to, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "firewalk:", err)
		os.Exit(1)
	}
}

// fn is one function or method of the package, with the calls it makes in
// source order.
type fn struct {
	name  string
	file  string
	calls []*types.Func
}

func run(pkgPath, from, to string, verbose bool) error {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, pkgPath)
	if err != nil {
		return err
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		return fmt.Errorf("loading %s: %v", pkgPath, pkgs[0].Errors)
	}
	pkg := pkgs[0]
	fns := map[*types.Func]*fn{}
	byName := map[string]*types.Func{}
	for _, file := range pkg.Syntax {
		fname := filepath.Base(pkg.Fset.Position(file.Pos()).Filename)
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			obj, _ := pkg.TypesInfo.Defs[fd.Name].(*types.Func)
			if obj == nil {
				continue
			}
			f := &fn{name: funcName(obj), file: fname}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if callee := calleeOf(pkg.TypesInfo, call); callee != nil && callee.Pkg() == pkg.Types {
					f.calls = append(f.calls, callee)
				}
				return true
			})
			fns[obj] = f
			byName[f.name] = obj
		}
	}
	entry, ok := byName[from]
	if !ok {
		return fmt.Errorf("no function %s in %s", from, pkgPath)
	}
	target, ok := byName[to]
	if !ok {
		return fmt.Errorf("no function %s in %s", to, pkgPath)
	}

	var stops []*fn
	seen := map[*types.Func]bool{}
	var walk func(*types.Func) bool
	walk = func(obj *types.Func) bool {
		if seen[obj] {
			return false
		}
		seen[obj] = true
		f := fns[obj]
		if f == nil {
			return false // declared without a body here
		}
		stops = append(stops, f)
		if obj == target {
			return true
		}
		for _, c := range f.calls {
			if walk(c) {
				return true
			}
		}
		return false
	}
	if !walk(entry) {
		return fmt.Errorf("%s is not reached from %s", to, from)
	}

	files := map[string]bool{}
	returns := 0
	prev := ""
	for i, s := range stops {
		mark := ""
		if s.file != prev {
			if files[s.file] {
				returns++
				mark = " (return)"
			}
			files[s.file] = true
		}
		prev = s.file
		if verbose {
			fmt.Printf("%3d %-22s %s%s\n", i+1, s.file, s.name, mark)
		}
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	fmt.Printf("firewalk from=%s to=%s stops=%d files=%d returns=%d\n", from, to, len(stops), len(files), returns)
	if verbose {
		fmt.Println("files:", strings.Join(names, " "))
	}
	return nil
}

// calleeOf is the function or method call calls statically, if any.
func calleeOf(info *types.Info, call *ast.CallExpr) *types.Func {
	var id *ast.Ident
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	case *ast.IndexExpr: // a generic function instantiated
		switch g := f.X.(type) {
		case *ast.Ident:
			id = g
		case *ast.SelectorExpr:
			id = g.Sel
		}
	}
	if id == nil {
		return nil
	}
	obj, _ := info.Uses[id].(*types.Func)
	if obj == nil {
		return nil
	}
	if sig, ok := obj.Type().(*types.Signature); ok && sig.Recv() != nil {
		if _, isIface := sig.Recv().Type().Underlying().(*types.Interface); isIface {
			return nil // a call through an interface
		}
	}
	return obj.Origin()
}

// funcName is Type.method for a method, the name for a function.
func funcName(obj *types.Func) string {
	sig := obj.Type().(*types.Signature)
	if sig.Recv() == nil {
		return obj.Name()
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name() + "." + obj.Name()
	}
	return obj.Name()
}
