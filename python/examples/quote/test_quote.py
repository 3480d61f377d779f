"""The quote example, called in-process as its users would test it."""

from quote import quote

from afterburn_runtime.testing import call


def test_a_quote() -> None:
    resp = call(quote, "POST", "/", body='{"items": [{"name": "tea", "price": 2.5, "quantity": 2}], "coupon": "HALF"}',
                request_id="r")
    assert resp.json() == {"total": 2.5, "items": 1, "request_id": "r"}


def test_a_bad_order_names_the_field() -> None:
    resp = call(quote, "POST", "/", body='{"items": [{"name": "tea", "price": "cheap"}]}')
    assert resp.status == 400
    assert resp.json()["message"] == "the request body is not valid JSON for Order: items[0].price: expected float, got str"
