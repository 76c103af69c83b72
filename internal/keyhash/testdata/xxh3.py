#!/usr/bin/python3
# Writes xxh3.txt: XXH3_64bits_withSeed of test keys, from the reference
# library (python3-xxhash, libxxhash 0.8). TestHashKeyIsSeededXXH3 reads it.
# Key n has n bytes, byte i being (i*167 + n*13 + 7) ^ (i >> 3) mod 256.
import xxhash

lengths = list(range(0, 301)) + [383, 384, 385, 511, 512, 1000, 1023, 1024,
    1025, 1087, 1088, 1089, 2047, 2048, 2049, 4159, 10000, 65535]
seeds = [0, 1, 0x9E3779B97F4A7C15, 0xFFFFFFFFFFFFFFFF, 0x0123456789ABCDEF]

print("# seed length XXH3-64, written by xxh3.py (xxHash %s)" % xxhash.XXHASH_VERSION)
for n in lengths:
    key = bytes(((i * 167 + n * 13 + 7) ^ (i >> 3)) & 0xFF for i in range(n))
    for seed in seeds:
        print("%016x %d %016x" % (seed, n, xxhash.xxh3_64_intdigest(key, seed=seed)))
