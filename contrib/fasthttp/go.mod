module github.com/shmzone/shmzone/contrib/fasthttp

go 1.26.8

require (
	github.com/shmzone/shmzone v0.0.0
	github.com/valyala/fasthttp v1.78.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/shmzone/shmzone => ../..
