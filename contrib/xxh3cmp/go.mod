module github.com/shmzone/shmzone/contrib/xxh3cmp

go 1.26.8

require (
	github.com/shmzone/shmzone v0.0.0
	github.com/zeebo/xxh3 v1.1.0
)

require (
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/shmzone/shmzone => ../..
