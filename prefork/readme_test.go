package prefork_test

import (
	"path/filepath"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

// TestReadmeExample checks that the repository's README shows the body of
// Example word for word, so that the copy users paste compiles.
func TestReadmeExample(t *testing.T) {
	testutil.READMEShows(t, "example_test.go", filepath.Join("..", "README.md"))
}
