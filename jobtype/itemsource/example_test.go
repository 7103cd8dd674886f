package itemsource_test

import (
	"fmt"

	"github.com/shardjob/shardjob/jobtype/itemsource"
)

// A source's output is a JSON array of strings, or one key per line.
func ExampleParse() {
	lines, _ := itemsource.Parse([]byte("acme\n\n  globex\n"))
	array, _ := itemsource.Parse([]byte(`["eu-west", "us-east"]`))
	fmt.Printf("%q %q\n", lines, array)
	// Output: ["acme" "globex"] ["eu-west" "us-east"]
}
