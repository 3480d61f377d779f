# Fixture: an OpenFaaS python3-http handler written the way the template's documentation
# shows one (event.body, event.headers, event.query, event.path; a dict body as JSON).
# Written for these tests, not copied.
def handle(event, context):
    if event.path == "/fail":
        return {"statusCode": "not a number"}
    return {
        "statusCode": 201,
        "body": {
            "method": event.method,
            "path": event.path,
            "name": event.query.get("name"),
            "length": len(event.body),
            "type": event.headers.get("Content-Type"),
            "host": context.hostname != "",
        },
        "headers": {"X-Served-By": "python3-http"},
    }
