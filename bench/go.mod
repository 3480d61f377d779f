module github.com/afterburn-dev/afterburn/bench

go 1.26.0

require github.com/afterburn-dev/afterburn/go/afterburn v0.0.0

require golang.org/x/image v0.47.0

// The library is benchmarked from this checkout, never from a published version.
replace github.com/afterburn-dev/afterburn/go/afterburn => ../go/afterburn
