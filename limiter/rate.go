package limiter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseRate parses a rate as lua-resty-redis-ratelimit's new() takes it. It
// returns the rate in requests per second.
//
// A rate is a number followed by "r/s" or "r/m", as nginx's limit_req_zone
// writes "10r/s" and "30r/m". A number alone is in requests per second. So
// "30r/m" is 0.5. The number is what Lua's tonumber reads. It may be a
// decimal such as "0.5r/s" or "1e3r/m", or a hexadecimal such as "0x10r/s".
// Spaces may surround it, as in " 10 r/s".
//
// The number must be positive and finite. For "r/m", the number divided by
// 60 must still be above 0. ParseRate refuses "infr/s", which the Lua
// module accepts and then computes with as an infinite rate.
//
// ParseRate returns ErrBadRate, saying what is wrong, if s is not such a
// rate.
func ParseRate(s string) (float64, error) {
	n, per, err := ParseRateParts(s)
	if err != nil {
		return 0, err
	}
	return n / per, nil
}

// ParseRateParts parses s as ParseRate does and returns its parts. n is the
// count, and per is the period in seconds. per is 1 for "r/s" and for a
// number alone, and 60 for "r/m". A caller can then compute as the Lua
// module does, n*1000/per.
//
// ParseRateParts returns the errors of ParseRate.
func ParseRateParts(s string) (n, per float64, err error) {
	num, per := s, 1.0
	if len(s) > 3 { // as the Lua module: "r/s" alone is no rate
		switch s[len(s)-3:] {
		case "r/s":
			num = s[:len(s)-3]
		case "r/m":
			num, per = s[:len(s)-3], 60
		}
	}
	n, ok := luaNumber(num)
	switch {
	case !ok:
		return 0, 0, fmt.Errorf("%w %q: want a number, then the unit \"r/s\" or \"r/m\", as in \"10r/s\" or \"0.5r/m\"", ErrBadRate, s)
	case !(n > 0):
		return 0, 0, fmt.Errorf("%w %q: the count %v is not positive", ErrBadRate, s, n)
	case math.IsInf(n, 0):
		return 0, 0, fmt.Errorf("%w %q: the count is infinite", ErrBadRate, s)
	case !(n/per > 0):
		return 0, 0, fmt.Errorf("%w %q: below the smallest rate a float64 holds", ErrBadRate, s)
	}
	return n, per, nil
}

// maxLuaExp is LuaJIT's bound on an exponent's digits: 1e1048575 is a
// number (infinite), 1e1048576 none.
const maxLuaExp = 1 << 20

// luaNumber parses s as LuaJIT's tonumber(s) reads a string: spaces around,
// a sign, then "inf", "infinity" or "nan" (any case), or a decimal
// (digits with one optional point, an optional e exponent), a hexadecimal
// ("0x", the same with a p exponent in binary powers) or a binary integer
// ("0b", at most 64 significant digits). Every conversion is correctly
// rounded, as LuaJIT's. ok is false where tonumber returns nil.
func luaNumber(s string) (v float64, ok bool) {
	s = strings.Trim(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	switch strings.ToLower(s) {
	case "inf", "infinity":
		v, ok = math.Inf(1), true
	case "nan":
		v, ok = math.NaN(), true
	default:
		if len(s) > 2 && s[0] == '0' && (s[1]|0x20) == 'b' {
			v, ok = luaBinary(s[2:])
		} else {
			v, ok = luaFloat(s)
		}
	}
	if neg {
		v = -v
	}
	return v, ok
}

// luaFloat parses a decimal or, after "0x", a hexadecimal number.
func luaFloat(s string) (float64, bool) {
	digit, expMark, prefix := isDigit, byte('e'), ""
	if len(s) >= 2 && s[0] == '0' && (s[1]|0x20) == 'x' {
		digit, expMark, prefix, s = isHexDigit, 'p', "0x", s[2:]
	}
	i, digits, point := 0, 0, false
scan:
	for ; i < len(s); i++ {
		switch {
		case digit(s[i]):
			digits++
		case s[i] == '.' && !point:
			point = true
		default:
			break scan
		}
	}
	if digits == 0 {
		return 0, false
	}
	mant, exp := s[:i], "0"
	if i < len(s) {
		if s[i]|0x20 != expMark {
			return 0, false
		}
		e := s[i+1:]
		sign := ""
		if e != "" && (e[0] == '+' || e[0] == '-') {
			sign, e = e[:1], e[1:]
		}
		x := 0
		for j := 0; j < len(e); j++ {
			if !isDigit(e[j]) {
				return 0, false
			}
			if x = x*10 + int(e[j]-'0'); x >= maxLuaExp {
				return 0, false
			}
		}
		if e == "" {
			return 0, false
		}
		exp = sign + e
	}
	// strconv rounds correctly too; a hexadecimal needs its p exponent,
	// and an out-of-range exponent gives ±Inf or 0, as in LuaJIT.
	mark := "e"
	if prefix != "" {
		mark = "p"
	}
	v, err := strconv.ParseFloat(prefix+mant+mark+exp, 64)
	if err != nil && !isRange(err) {
		return 0, false
	}
	return v, true
}

// luaBinary parses the digits of a "0b" integer.
func luaBinary(s string) (float64, bool) {
	t := strings.TrimLeft(s, "0")
	if s == "" || len(t) > 64 || strings.Trim(t, "01") != "" {
		return 0, false
	}
	x, _ := strconv.ParseUint("0"+t, 2, 64)
	return float64(x), true
}

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isHexDigit(c byte) bool { return isDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'f') }

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
