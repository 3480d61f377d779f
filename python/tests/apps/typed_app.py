"""A typed handler for the process tests: the launcher must serve it as a typed handler
(its two parameters are not WSGI's environ and start_response)."""

from __future__ import annotations

from dataclasses import dataclass

from afterburn_runtime import Request


@dataclass
class Item:
    name: str
    price: float


@dataclass
class Order:
    items: list[Item]


@dataclass
class Quote:
    total: float
    request_id: str


def quote(order: Order, req: Request) -> Quote:
    return Quote(sum(i.price for i in order.items), req.request_id)
