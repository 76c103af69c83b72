package testutil

import (
	"os"
	"strconv"
	"testing"
)

// BenchZoneEnv names the size, in MiB, of the zone that dict's and
// limiter's benchmarks open. bench/peers/nginx.sh sets it to the size of
// its lua_shared_dict, so that both sides run in zones of one size.
const BenchZoneEnv = "SHMZONE_BENCH_ZONE_MIB"

// BenchZone returns the size of the benchmarks' zone in bytes: BenchZoneEnv
// MiB when it is set, def otherwise. A value that is not a whole number of
// MiB from 1 to 4,095 fails b.
func BenchZone(b testing.TB, def int64) int64 {
	b.Helper()
	v := os.Getenv(BenchZoneEnv)
	if v == "" {
		return def
	}
	mib, err := strconv.Atoi(v)
	if err != nil || mib < 1 || mib > 4095 {
		b.Fatalf("testutil: %s=%q: want a whole number of MiB from 1 to 4095", BenchZoneEnv, v)
	}
	return int64(mib) << 20
}
