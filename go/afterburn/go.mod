module github.com/afterburn-dev/afterburn/go/afterburn

go 1.22
