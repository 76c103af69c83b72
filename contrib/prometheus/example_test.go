package shmprom_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/shmzone/shmzone/contrib/prometheus"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/httplimit"
)

// The lines between "README:" and "README end." are the README's
// Prometheus example, word for word (TestReadmeExample checks).
func Example() {
	dir, _ := os.MkdirTemp("", "shmprom-example")
	defer os.RemoveAll(dir)
	zonePath := filepath.Join(dir, "app.zone")

	// README:
	d, err := dict.Open(zonePath, dict.Options{Size: 64 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	metrics := shmprom.NewCollector()
	prometheus.MustRegister(metrics)
	if err := metrics.AddDict("app", d); err != nil {
		log.Fatal(err)
	}
	count, err := limiter.NewCount(d, "api", 100, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	// Use the wrapper in the limiter's place: it counts the decisions.
	l, err := metrics.AddLimiter("api", count)
	if err != nil {
		log.Fatal(err)
	}
	limit, err := httplimit.New(l, httplimit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/metrics", promhttp.Handler())
	http.Handle("/", limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	})))
	// README end.

	l.Incoming(context.Background(), "192.0.2.1", true)
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "shmzone_limiter_decisions_total" {
			for _, m := range mf.GetMetric() {
				fmt.Println(m.GetLabel()[0].GetValue(), m.GetLabel()[1].GetValue(), m.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// allowed api 1
	// error api 0
	// rejected api 0
}
