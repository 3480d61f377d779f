module handler/function

go 1.22

require github.com/afterburn-dev/afterburn/go/afterburn v0.1.0
