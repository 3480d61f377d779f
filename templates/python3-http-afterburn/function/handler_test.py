# Run during the image build (python -m pytest function): a failure stops the build.
# afterburn_runtime.testing.call(..., shape="openfaas") hands handle() the event and context
# the watchdog's workers give it, and reads back the response a client would get.
from afterburn_runtime.testing import call

from .handler import handle


def test_handle():
    resp = call(handle, "GET", "/", shape="openfaas")
    assert resp.status == 200
    assert resp.text == "Hello from OpenFaaS!"
