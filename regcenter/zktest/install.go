package zktest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// ErrNotInstalled means ZooKeeper (or the Java runtime it needs) was not
// found. The error wrapping it says how to install it.
var ErrNotInstalled = errors.New("zktest: zookeeper is not installed")

// Where Debian's zookeeper package puts things.
const (
	debianJavaDir = "/usr/share/java"
	debianHome    = "/usr/share/zookeeper"
)

const installHint = "install it with `sudo apt-get install zookeeper` (Debian/Ubuntu; it brings Java along), " +
	"or unpack an Apache ZooKeeper release (apache-zookeeper-X.Y.Z-bin.tar.gz) and set ZOOKEEPER_HOME to its directory"

// installation is what it takes to run a ZooKeeper server.
type installation struct {
	home      string   // ZooKeeper's home, for messages
	java      string   // path of the java binary
	classpath []string // jars
}

// findInstallation looks for ZooKeeper the way scripts/zookeeper.sh does:
// $ZOOKEEPER_HOME if set, else Debian's package.
func findInstallation() (*installation, error) {
	inst := &installation{}
	if home := os.Getenv("ZOOKEEPER_HOME"); home != "" {
		cp, err := homeClasspath(home)
		if err != nil {
			return nil, err
		}
		inst.home, inst.classpath = home, cp
	} else {
		cp := debianClasspath(debianJavaDir)
		if cp == nil {
			return nil, fmt.Errorf("%w: neither ZOOKEEPER_HOME is set nor %s exists; %s",
				ErrNotInstalled, filepath.Join(debianJavaDir, "zookeeper.jar"), installHint)
		}
		inst.home, inst.classpath = debianHome, cp
	}
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	inst.java = java
	return inst, nil
}

// homeClasspath lists the jars of the ZooKeeper in home: an Apache release
// keeps them in lib/ (older ones also at the top); a Debian-style share
// directory such as /usr/share/zookeeper has them in ../java.
func homeClasspath(home string) ([]string, error) {
	fi, err := os.Stat(home)
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: ZOOKEEPER_HOME=%s is not a directory; %s", ErrNotInstalled, home, installHint)
	}
	var jars []string
	for _, pattern := range []string{filepath.Join(home, "lib", "*.jar"), filepath.Join(home, "*.jar")} {
		m, _ := filepath.Glob(pattern)
		sort.Strings(m)
		jars = append(jars, m...)
	}
	for _, j := range jars {
		if strings.HasPrefix(filepath.Base(j), "zookeeper") {
			return jars, nil
		}
	}
	if cp := debianClasspath(filepath.Join(home, "..", "java")); cp != nil {
		return cp, nil
	}
	return nil, fmt.Errorf("%w: ZOOKEEPER_HOME=%s holds no zookeeper*.jar (looked in %s, %s and %s); %s",
		ErrNotInstalled, home, filepath.Join(home, "lib"), home, filepath.Join(home, "..", "java"), installHint)
}

// debianClasspath returns the classpath for Debian's packaging in dir, or
// nil if dir has no zookeeper.jar. The jar's manifest names its
// dependencies; the slf4j binding for log4j is added so the server logs,
// and Netty's codec and resolver, which the manifest leaves out but the
// Netty connection factory (the only one that serves TLS) needs.
func debianClasspath(dir string) []string {
	zk := filepath.Join(dir, "zookeeper.jar")
	if !isFile(zk) {
		return nil
	}
	dir = filepath.Dir(zk) // cleaned
	cp := []string{filepath.Join(dir, "zookeeper.jar")}
	for _, name := range []string{"slf4j-log4j12.jar", "log4j-1.2.jar", "netty-codec.jar", "netty-resolver.jar"} {
		if p := filepath.Join(dir, name); isFile(p) {
			cp = append(cp, p)
		}
	}
	return cp
}

// findJava returns $JAVA_HOME/bin/java if it exists, else java from PATH.
func findJava() (string, error) {
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		if p := filepath.Join(jh, "bin", "java"); isFile(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: no java on PATH and JAVA_HOME is not set; "+
			"install a Java runtime with `sudo apt-get install default-jre-headless` or set JAVA_HOME", ErrNotInstalled)
	}
	return p, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
