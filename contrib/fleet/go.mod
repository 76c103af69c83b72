module github.com/shmzone/shmzone/contrib/fleet

go 1.26.8

require (
	github.com/gofiber/fiber/v3 v3.1.0
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.73.1
	github.com/shmzone/shmzone v0.0.0
	github.com/shmzone/shmzone/contrib/fasthttp v0.0.0
	github.com/shmzone/shmzone/contrib/fiber v0.0.0
	github.com/shmzone/shmzone/contrib/prometheus v0.0.0
	github.com/valyala/fasthttp v1.78.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/gofiber/schema v1.7.0 // indirect
	github.com/gofiber/utils/v2 v2.0.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pandatix/go-abnf v0.5.3 // indirect
	github.com/philhofer/fwd v1.2.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/tinylib/msgp v1.6.3 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace (
	github.com/shmzone/shmzone => ../..
	github.com/shmzone/shmzone/contrib/fasthttp => ../fasthttp
	github.com/shmzone/shmzone/contrib/fiber => ../fiber
	github.com/shmzone/shmzone/contrib/prometheus => ../prometheus
)
