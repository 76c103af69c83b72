// Package fleet holds tests only: prefork fleets of each framework the
// contrib modules serve, with their limiter middleware and shmprom's host
// counts, run as real processes. It is a module of its own so that no
// other module needs all of their dependencies.
package fleet
