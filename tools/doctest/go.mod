module github.com/afterburn-dev/afterburn/tools/doctest

go 1.26.0
