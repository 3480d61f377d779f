module github.com/afterburn-dev/afterburn/go/afterburn/cloudevents

go 1.22

require (
	github.com/afterburn-dev/afterburn/go/afterburn v0.1.0
	github.com/cloudevents/sdk-go/v2 v2.16.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
)

// Until the library is published (go/README.md, Install): the library of this checkout.
replace github.com/afterburn-dev/afterburn/go/afterburn => ../
