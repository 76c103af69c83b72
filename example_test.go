package shmzone_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/httplimit"
)

// The lines between "README:" and "README end." are the README's quick
// start, word for word (TestReadmeExample checks): what it leaves out (the
// zone's path, http.ListenAndServe) is around them.
func Example() {
	dir, _ := os.MkdirTemp("", "shmzone-example")
	defer os.RemoveAll(dir)
	zonePath := filepath.Join(dir, "app.zone")

	// README:
	// Every process opens the same zone file. The first one creates it.
	d, err := dict.Open(zonePath, dict.Options{Size: 64 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	// 100 requests per minute per client address, across every process.
	l, err := limiter.NewCount(d, "api", 100, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	limit, err := httplimit.New(l, httplimit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	http.Handle("/", limit(hello))
	// README end.

	for range 2 {
		w := httptest.NewRecorder()
		http.DefaultServeMux.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		fmt.Println(w.Code, w.Header().Get("RateLimit-Policy"), w.Header().Get("RateLimit"))
	}
	// Output:
	// 200 "default";q=100;w=60 "default";r=99;t=60
	// 200 "default";q=100;w=60 "default";r=98;t=60
}
