// Package fleet holds tests only: prefork fleets of each framework the
// contrib modules serve, with their limiter middleware and shmprom's host
// counts, run as real processes. It is a module of its own so that no
// other module needs all of their dependencies.
//
// The module also holds cmd/e2eserver, the server that the end-to-end
// section of the benchmark report (bench/report) runs under load: the
// same frameworks under package prefork, with each middleware or none.
package fleet
