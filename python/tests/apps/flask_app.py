"""An ordinary Flask app, unchanged: it knows nothing of AfterBurn."""

from flask import Flask, Response, request, stream_with_context

app = Flask(__name__)


@app.get("/hello")
def hello():
    return "hello from flask"


@app.post("/echo")
def echo():
    return {
        "body": request.get_data(as_text=True),
        "json": request.get_json(silent=True),
        "content_type": request.content_type,
        "accept": request.headers.getlist("Accept"),
        "args": request.args.to_dict(flat=False),
        "path": request.path,
        "request_id": request.environ.get("afterburn.request_id"),
    }


@app.get("/cookies")
def cookies():
    resp = Response("two cookies")
    resp.set_cookie("a", "1")
    resp.set_cookie("b", "2")
    return resp


@app.get("/stream")
def stream():
    def generate():
        for i in range(3):
            yield f"line {i}\n"

    return Response(stream_with_context(generate()), mimetype="text/plain")


@app.get("/boom")
def boom():
    raise RuntimeError("flask secret")


@app.get("/missing-on-purpose")
def missing():
    return {"error": "nope"}, 404
