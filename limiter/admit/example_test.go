package admit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
)

// A framework's middleware decides with Decide, and ends the request with
// Finish once it has the status. A dry run lets every request through.
func Example() {
	dir, _ := os.MkdirTemp("", "admit-example")
	defer os.RemoveAll(dir)
	d, err := dict.Open(filepath.Join(dir, "app.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	l, _ := limiter.NewCount(d, "login", 1, time.Minute)
	g, err := admit.New(l, admit.Options{
		DryRun: true,
		Refund: func(status int) bool { return status < 400 }, // count failures only
	})
	if err != nil {
		panic(err)
	}
	for _, status := range []int{200, 401, 401, 401} {
		var a admit.Admission
		if err := g.Decide(context.Background(), "198.51.100.7", 1, &a); err != nil {
			panic(err)
		}
		fmt.Println("allowed", a.Decision.Allowed, "would reject", a.DryRunRejected)
		if a.Decision.Allowed {
			a.Pass.Finish(status) // the handler answered status
		}
	}
	fmt.Println("would have rejected:", g.Stats().DryRunRejected())
	// Output:
	// allowed true would reject false
	// allowed true would reject false
	// allowed true would reject true
	// allowed true would reject true
	// would have rejected: 2
}
