module handler/function

go 1.26.0

require github.com/afterburn-dev/afterburn/go v0.1.0
