package crew_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeExampleIsExampleNewBody checks that the README's Go example is ExampleNew's body
// line for line, so that the first code a reader meets compiles and prints what its test says.
func TestReadmeExampleIsExampleNewBody(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	block, _, ok2 := strings.Cut(block, "```\n")
	if !ok || !ok2 {
		t.Fatal("README.md has no ```go block")
	}
	_, body, ok := strings.Cut(string(src), "func ExampleNew() {\n")
	body, _, ok2 = strings.Cut(body, "\t// Output:")
	if !ok || !ok2 {
		t.Fatal("example_test.go has no ExampleNew with an Output comment")
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	if want := strings.Join(lines, "\n") + "\n"; block != want {
		t.Errorf("README.md's example:\n%s\nExampleNew's body:\n%s", block, want)
	}
}
