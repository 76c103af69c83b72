// Command e2eserver is the server of the end-to-end section of the
// benchmark report (bench/report). It is a prefork server that answers
// every request with "ok", behind a framework's limiter middleware or
// behind none.
//
// The master starts -children children through package prefork, on
// -addr. With -limiter count, each child opens the 64 MiB zone at -zone
// and limits each client address to -limit requests a minute, with a
// limiter Count. The middleware is httplimit's for net/http, shmfasthttp's
// for fasthttp and shmfiber's for fiber. With -limiter static, the
// middleware's limiter admits every request, with the headers of -limit
// requests a minute, and opens no zone: the server pays for the
// middleware and its headers, and for no decision. -headers=false sets
// the middleware's NoHeaders.
//
// The master writes prefork's reports on stdout, a line each. Once every
// child accepts, it writes one more line, "ready children=PID,PID", which
// names the children. SIGTERM or SIGINT drains the children and ends the
// master.
//
// Usage:
//
//	e2eserver [-framework nethttp|fasthttp|fiber] [-limiter none|count|static]
//	          [-headers=false] [-limit N] [-zone PATH] [-addr HOST:PORT]
//	          [-children N]
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
