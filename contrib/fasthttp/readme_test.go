package shmfasthttp_test

import (
	"path/filepath"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

// TestReadmeExample checks that the repository's README shows the part of
// Example_prefork between its README markers word for word, so that the
// copy users paste compiles.
func TestReadmeExample(t *testing.T) {
	testutil.READMEShows(t, "prefork_example_test.go", filepath.Join("..", "..", "README.md"))
}
