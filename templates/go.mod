module github.com/afterburn-dev/afterburn/templates

go 1.26.0
