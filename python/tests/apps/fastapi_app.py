"""An ordinary FastAPI app, unchanged, with a lifespan that loads a "model" once."""

import sys
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import BaseModel

STATE = {"startups": 0}


@asynccontextmanager
async def lifespan(app: FastAPI):
    STATE["startups"] += 1
    STATE["model"] = {"weights": [1, 2, 3]}
    print("fastapi lifespan startup", flush=True)
    yield {"loaded": True}
    print("fastapi lifespan shutdown", file=sys.stderr, flush=True)


app = FastAPI(lifespan=lifespan)


class Item(BaseModel):
    name: str
    price: float


@app.get("/hello")
async def hello():
    return PlainTextResponse("hello from fastapi")


@app.post("/items")
async def create_item(item: Item, request: Request):
    return {
        "name": item.name,
        "price": item.price,
        "startups": STATE["startups"],
        "loaded": getattr(request.state, "loaded", None),
        "request_id": request.scope.get("extensions", {}).get("afterburn", {}).get("request_id"),
    }


@app.get("/stream")
async def stream():
    async def generate():
        for i in range(3):
            yield f"tick {i}\n"

    return StreamingResponse(generate(), media_type="text/plain")


@app.post("/raw")
async def raw(request: Request):
    body = await request.body()
    return {"len": len(body), "headers": request.headers.getlist("x-rep")}


@app.get("/boom")
async def boom():
    raise RuntimeError("fastapi secret")
