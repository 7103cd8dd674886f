package embedded_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/shardjob/shardjob/regcenter/embedded"
)

// Every process of the host that names the same Dir shares one member:
// the first hosts it, the others connect to it, and one of them takes it
// over when the host ends.
func ExampleJoin() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "shop-registry-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	rc, err := embedded.Join(ctx, embedded.Config{Dir: filepath.Join(dir, "registry"), Namespace: "shop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close() // after the scheduler's Shutdown: job.NewScheduler(rc), ...
	fmt.Println("hosting:", rc.Hosting())
	// Output: hosting: true
}
