package prefork_test

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
	"github.com/shmzone/shmzone/prefork"
)

// The whole main of a prefork server: 4 children on :8080 share one limit
// of 10 requests a second per client through one zone file. The master and
// each child run the same code; Run tells them apart. The README shows the
// lines between "README:" and "README end." word for word
// (TestReadmeExample checks).
func Example() {
	// README:
	o := prefork.Options{Addr: ":8080", Children: 4, Logf: log.Printf}
	err := prefork.Run(context.Background(), o, func(ctx context.Context, ln net.Listener) error {
		d, err := dict.Open("/dev/shm/app.zone", dict.Options{Size: 16 << 20})
		if err != nil {
			return err
		}
		defer d.Close()
		l, err := limiter.NewReq(d, "api", 10, 20)
		if err != nil {
			return err
		}
		mw, err := httplimit.New(l, httplimit.Options{Options: admit.Options{NoDelay: true}})
		if err != nil {
			return err
		}
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "hello\n")
		}))
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		return prefork.Serve(ctx, srv, ln, 10*time.Second) // drains on SIGTERM
	})
	if err != nil {
		log.Fatal(err)
	}
	// README end.
}
