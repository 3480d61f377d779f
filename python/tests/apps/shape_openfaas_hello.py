# Fixture: the handler the OpenFaaS python3-http template gives a new function, unchanged
# (openfaas/python-flask-template, template/python3-http/function/handler.py, MIT licence,
# Copyright (c) 2017 Alex Ellis). templates/python3-http-afterburn/function/handler.py is
# the same file, byte for byte.
def handle(event, context):
    return {
        "statusCode": 200,
        "body": "Hello from OpenFaaS!"
    }
