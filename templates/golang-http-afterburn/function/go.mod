module handler/function

go 1.22

require github.com/openfaas/templates-sdk/go-http v0.0.0-20220408082716-5981c545cb03
