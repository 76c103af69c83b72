package headers

import "errors"

// ErrBadName is returned by New for a policy name an sf-string cannot
// hold: one with a byte outside printable ASCII.
var ErrBadName = errors.New("headers: bad policy name")
