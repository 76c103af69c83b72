module github.com/shmzone/shmzone/contrib/fasthttp

go 1.26.8

require (
	github.com/shmzone/shmzone v0.0.0
	github.com/valyala/fasthttp v1.69.0
)

require (
	github.com/andybalholm/brotli v1.2.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/klauspost/compress v1.18.2 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/shmzone/shmzone => ../..
