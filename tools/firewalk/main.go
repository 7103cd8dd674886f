// Command firewalk walks a fire's path through package job's source and
// counts its stops and its returns: how the code a fire runs is laid out
// in files.
//
//	go run ./tools/firewalk                       # from (*runner).fireScheduled to the completion write
//	go run ./tools/firewalk -v                    # and every stop, in order
//	go run ./tools/firewalk -from fireTriggered
//
// The fire path's stages in a room of their own (-through, by default
// internal/firing: the Firer the fire is handed to as a value) are walked
// as the package's own: a fire's path is the same walk whichever package
// holds its stages.
//
// The walk starts at the entry function and follows the calls of each
// function it reaches in the order they appear in its source (a call
// inside a function literal counts as its enclosing function's), each to a
// function or method declared in the package, depth first, each function
// once, until it reaches the target. With -rooms the walk also follows
// calls into the packages below it (job/internal/…), so that a stage moved
// into a room is still walked; a function of a room is named with its
// folder: internal/book:Book.Reserve. Without -rooms, a target in a room
// (the default: the completion stage's write) is reached by the first call
// into its room, the hand-off to that stage, which is the walk's last stop.
//
//	go run ./tools/firewalk -rooms                # the same walk through the rooms Calls through interfaces or function
//
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
	pkgPath := flag.String("pkg", "github.com/shardjob/shardjob/job", "the package walked, with the packages below it")
	from := flag.String("from", "runner.fireScheduled", "the entry: Type.method or function, prefixed with folder: for a package below")
	to := flag.String("to", "internal/completion:Completer.writeCompletion", "where the walk ends: Type.method or function, prefixed with folder: for a package below")
	verbose := flag.Bool("v", false, "print every stop")
	rooms := flag.Bool("rooms", false, "follow calls into the packages below the package walked")
	through := flag.String("through", "internal/firing", "rooms below the package whose calls are followed as its own (folders, comma-separated; empty: none)")
	flag.Parse()
	followed := map[string]bool{}
	for r := range strings.SplitSeq(*through, ",") {
		if r = strings.TrimSpace(r); r != "" {
			followed[r] = true
		}
	}
	if err := run(*pkgPath, *from, *to, *rooms, followed, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "firewalk:", err)
		os.Exit(1)
	}
}

// fn is one function or method of the package, with the calls it makes in
// source order.
type fn struct {
	name  string
	file  string
	calls []string
}

func run(pkgPath, from, to string, rooms bool, through map[string]bool, verbose bool) error {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo}
	// The target's room: without -rooms, the first call into it ends the
	// walk (the hand-off to its stage).
	toRoom, _, inRoom := strings.Cut(to, ":")
	patterns := []string{pkgPath}
	if rooms || inRoom || len(through) > 0 {
		patterns = append(patterns, pkgPath+"/...")
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return err
	}
	// Functions are keyed by name (folder:Type.method), not by their
	// types.Func: each package is checked on its own, so a function seen
	// from its caller's package is another object than its declaration.
	fns := map[string]*fn{}
	for _, pkg := range pkgs {
		if len(pkg.Errors) > 0 {
			return fmt.Errorf("loading %s: %v", pkg.PkgPath, pkg.Errors)
		}
		for _, file := range pkg.Syntax {
			fname := filepath.Base(pkg.Fset.Position(file.Pos()).Filename)
			if strings.HasSuffix(fname, "_test.go") {
				continue
			}
			if rel := folderOf(pkgPath, pkg.PkgPath); rel != "" {
				fname = rel + "/" + fname
			}
			for _, d := range file.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				obj, _ := pkg.TypesInfo.Defs[fd.Name].(*types.Func)
				if obj == nil {
					continue
				}
				f := &fn{name: keyOf(pkgPath, obj), file: fname}
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					if callee := calleeOf(pkg.TypesInfo, call); callee != nil && callee.Pkg() != nil && followed(pkgPath, callee.Pkg().Path(), toRoom, rooms, inRoom, through) {
						f.calls = append(f.calls, keyOf(pkgPath, callee))
					}
					return true
				})
				fns[f.name] = f
			}
		}
	}
	if fns[from] == nil {
		return fmt.Errorf("no function %s in %s", from, pkgPath)
	}
	if fns[to] == nil {
		return fmt.Errorf("no function %s in %s", to, pkgPath)
	}

	var stops []*fn
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(name string) bool {
		if seen[name] {
			return false
		}
		seen[name] = true
		f := fns[name]
		if f == nil {
			return false // declared without a body here
		}
		stops = append(stops, f)
		if name == to || !rooms && inRoom && strings.HasPrefix(name, toRoom+":") {
			return true
		}
		for _, c := range f.calls {
			if walk(c) {
				return true
			}
		}
		return false
	}
	if !walk(from) {
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
			fmt.Printf("%3d %-32s %s%s\n", i+1, s.file, s.name, mark)
		}
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	fmt.Printf("firewalk from=%s to=%s rooms=%t through=%s stops=%d files=%d returns=%d\n", from, to, rooms, strings.Join(sortedKeys(through), ","), len(stops), len(files), returns)
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

// within reports whether path is root or a package below it.
func within(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+"/")
}

// folderOf is path's folder below root ("" for root itself).
func folderOf(root, path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, root), "/")
}

// keyOf names obj as the walk's flags do: Type.method or function, with
// its folder below root and a colon before it outside root.
func keyOf(root string, obj *types.Func) string {
	name := funcName(obj)
	if rel := folderOf(root, obj.Pkg().Path()); rel != "" {
		return rel + ":" + name
	}
	return name
}

// followed reports whether the walk follows a call into the package at
// path: the package walked, a room followed as its own (through), the
// target's room (its first call ends the walk), or with rooms any package
// below.
func followed(pkgPath, path, toRoom string, rooms, inRoom bool, through map[string]bool) bool {
	if path == pkgPath {
		return true
	}
	if !within(pkgPath, path) {
		return false
	}
	folder := folderOf(pkgPath, path)
	return rooms || through[folder] || inRoom && folder == toRoom
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
