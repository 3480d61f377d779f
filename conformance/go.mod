module github.com/afterburn-dev/afterburn/conformance

go 1.26.0
