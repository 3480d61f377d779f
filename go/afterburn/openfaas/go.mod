module github.com/afterburn-dev/afterburn/go/afterburn/openfaas

go 1.22

require (
	github.com/afterburn-dev/afterburn/go/afterburn v0.1.0
	github.com/openfaas/templates-sdk/go-http v0.0.0-20220408082716-5981c545cb03
)

// Until the library is published (go/README.md, Install): the library of this checkout.
replace github.com/afterburn-dev/afterburn/go/afterburn => ../
