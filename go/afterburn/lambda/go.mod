module github.com/afterburn-dev/afterburn/go/afterburn/lambda

go 1.22

require (
	github.com/afterburn-dev/afterburn/go/afterburn v0.1.0
	github.com/aws/aws-lambda-go v1.54.0
)

// Until the library is published (go/README.md, Install): the library of this checkout.
replace github.com/afterburn-dev/afterburn/go/afterburn => ../
