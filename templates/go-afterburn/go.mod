module handler

go 1.22

require (
	github.com/afterburn-dev/afterburn/go/afterburn v0.1.0
	handler/function v0.0.0-00010101000000-000000000000
)

replace handler/function => ./function
