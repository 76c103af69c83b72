package limiter

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseRate parses a rate as nginx's limit_req_zone writes it, "10r/s" or
// "30r/m", and returns it in requests per second (30r/m is 0.5). The count
// is a positive decimal integer. Errors: ErrBadRate, saying what is wrong.
func ParseRate(s string) (float64, error) {
	num, unit, ok := strings.Cut(s, "r/")
	if !ok {
		return 0, fmt.Errorf("%w %q: want a count, \"r/\" and a unit, as in \"10r/s\"", ErrBadRate, s)
	}
	var per float64
	switch unit {
	case "s":
		per = 1
	case "m":
		per = 60
	default:
		return 0, fmt.Errorf("%w %q: unit %q is not s or m", ErrBadRate, s, unit)
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%w %q: count %q is not a positive integer", ErrBadRate, s, num)
	}
	return float64(n) / per, nil
}
