module handler

go 1.22

require (
	github.com/afterburn-dev/afterburn/go/afterburn v0.1.0
	github.com/afterburn-dev/afterburn/go/afterburn/openfaas v0.1.0
	github.com/openfaas/templates-sdk/go-http v0.0.0-20220408082716-5981c545cb03
	handler/function v0.0.0-00010101000000-000000000000
)

replace handler/function => ./function
