"""Run during the image build (python -m pytest function): a failure stops the build.

afterburn_runtime.testing.call sends the request through the same parser and response
framing a worker uses, without a watchdog.
"""

from afterburn_runtime.testing import call

from .handler import handle


def test_get_greets_by_name():
    resp = call(handle, "GET", "/?name=Ada")
    assert resp.status == 200
    assert resp.text == "Hello, Ada!\n"
    assert resp.headers.get("content-type") == "text/plain; charset=utf-8"


def test_get_without_name():
    assert call(handle, "GET", "/").text == "Hello, world!\n"


def test_post_echoes_the_body():
    resp = call(handle, "POST", "/", body=b'{"n": 1}', headers={"Content-Type": "application/json"})
    assert resp.status == 200
    assert resp.body == b'{"n": 1}'
    assert resp.headers.get("content-type") == "application/json"
